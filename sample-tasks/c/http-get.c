/*
 * `http-get`: payload {"url": "...", "timeout_ms": N?, "times": N?, "upload_bytes": N?};
 * fetches the URL (`times` times, default once) through the host's egress policy and
 * completes with the last response's {"status": S, "body_bytes": N, "body_head": "first 64
 * bytes", "requests": N}. With `upload_bytes` it POSTs that many bytes (`x`) instead of
 * GETting (a body for the host's request-body cap).
 * A request the host refuses or that fails ends the job `dead` at once, its message naming
 * the wasi:http error code (a refusal will not change on a retry). The same task as the
 * Rust sample sample-tasks/http-get; built against contract 0.2 (bindings/v0.2).
 *
 * The payload reader handles a flat JSON object (string and number values; other values
 * are refused) with no escapes in `url`: a real task would link a JSON library.
 */
#include <ctype.h>

#include "sluice_task.h"

typedef struct {
    char url[2048];
    unsigned long long timeout_ms, times, upload_bytes;
    bool upload;
} args_t;

/* Reads {"key": value, ...}; NULL on success, else what is wrong. */
static const char *read_args(const uint8_t *p, const uint8_t *end, args_t *args) {
    bool has_url = false;
#define SKIP_WS() while (p < end && isspace(*p)) p++
    SKIP_WS();
    if (p >= end || *p++ != '{') return "payload is not a JSON object";
    SKIP_WS();
    if (p < end && *p == '}') return "payload needs a string `url`";
    for (;;) {
        SKIP_WS();
        if (p >= end || *p++ != '"') return "expected a key";
        const uint8_t *key = p;
        while (p < end && *p != '"' && *p != '\\') p++;
        if (p >= end || *p != '"') return "unsupported key";
        size_t key_len = (size_t)(p++ - key);
        SKIP_WS();
        if (p >= end || *p++ != ':') return "expected ':'";
        SKIP_WS();
        if (p < end && *p == '"') {
            const uint8_t *s = ++p;
            while (p < end && *p != '"' && *p != '\\') p++;
            if (p >= end || *p != '"') return "unsupported string (escapes are not read)";
            size_t len = (size_t)(p++ - s);
            if (key_len == 3 && memcmp(key, "url", 3) == 0) {
                if (len >= sizeof args->url) return "url is too long";
                memcpy(args->url, s, len);
                args->url[len] = 0;
                has_url = true;
            }
        } else if (p < end && isdigit(*p)) {
            unsigned long long n = 0;
            while (p < end && isdigit(*p)) n = n * 10 + (unsigned)(*p++ - '0');
            if (key_len == 10 && memcmp(key, "timeout_ms", 10) == 0) args->timeout_ms = n;
            if (key_len == 5 && memcmp(key, "times", 5) == 0) args->times = n;
            if (key_len == 12 && memcmp(key, "upload_bytes", 12) == 0) {
                args->upload_bytes = n;
                args->upload = true;
            }
        } else if (p + 4 <= end && memcmp(p, "null", 4) == 0) {
            p += 4;
        } else {
            return "unsupported value (strings, non-negative integers and null only)";
        }
        SKIP_WS();
        if (p < end && *p == ',') { p++; continue; }
        if (p < end && *p == '}') break;
        return "expected ',' or '}'";
    }
#undef SKIP_WS
    return has_url ? NULL : "payload needs a string `url`";
}

/* Appends `bytes` as a JSON string body, invalid UTF-8 replaced by U+FFFD (like Rust's
 * String::from_utf8_lossy). `out` holds at least 6 * len + 1 bytes. */
static size_t json_lossy(char *out, const uint8_t *bytes, size_t len) {
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        uint8_t c = bytes[i];
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        bool valid = n > 0 && i + n <= len;
        for (size_t k = 1; valid && k < n; k++) valid = (bytes[i + k] & 0xC0) == 0x80;
        if (!valid) {
            o += (size_t)sprintf(out + o, "\\ufffd");
            i++;
        } else if (n == 1 && (c == '"' || c == '\\')) {
            out[o++] = '\\';
            out[o++] = (char)c;
            i++;
        } else if (n == 1 && c < 0x20) {
            o += (size_t)sprintf(out + o, "\\u%04x", c);
            i++;
        } else {
            memcpy(out + o, bytes + i, n);
            o += n;
            i += n;
        }
    }
    out[o] = 0;
    return o;
}

static sluice_result_t run(const sluice_job_t *job) {
    args_t args = {{0}, 0, 0, 0, false};
    const char *bad = read_args(job->payload.ptr, job->payload.ptr + job->payload.len, &args);
    if (bad) return sluice_fatal("%s", bad);
    unsigned long long times = args.times ? args.times : 1;
    sluice_http_request_t req = {0};
    req.url = args.url;
    req.timeout_ms = args.timeout_ms;
    uint8_t *upload = NULL;
    if (args.upload) {
        upload = (uint8_t *)sluice_http_alloc((size_t)args.upload_bytes);
        memset(upload, 'x', (size_t)args.upload_bytes);
        req.method = "POST";
        req.body = upload;
        req.body_len = (size_t)args.upload_bytes;
    }
    sluice_http_response_t res = {0};
    sluice_http_error_t err;
    for (unsigned long long i = 0; i < times; i++) {
        sluice_http_response_free(&res);
        if (!sluice_http_send(&req, &res, &err)) {
            free(upload);
            return sluice_fatal("%s", err.message);
        }
    }
    free(upload);
    char head[6 * 64 + 1];
    json_lossy(head, res.body, res.body_len < 64 ? res.body_len : 64);
    char out[512];
    snprintf(out, sizeof out, "{\"status\":%u,\"body_bytes\":%zu,\"body_head\":\"%s\",\"requests\":%llu}",
             res.status, res.body_len, head, times);
    sluice_http_response_free(&res);
    return sluice_ok_str(out);
}

SLUICE_TASK(run)
