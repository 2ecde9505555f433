/*
 * `bearer-call`: payload {"secret": "NAME", "url": "...", "fail": false}; reads the
 * tenant's secret NAME and sends `POST url` with `Authorization: Bearer <value>` and the
 * JSON body {"amount":42,"memo":"café ✓"}, the way a task calls a third-party API with a
 * stored key. It logs a line holding the value and prints another (the host masks both as
 * `[secret NAME]`), and completes with {"status": S}. A 4xx answer is fatal (the same
 * request would be refused again), a 5xx one a retry; with "fail": true it returns a
 * retryable error whose message holds the value (masked in last_error too). A secret not
 * granted or not set is fatal, naming why. The payload of the Rust sample
 * sample-tasks/bearer-call (which sends a GET); built against contract 0.2 (bindings/v0.2).
 *
 * The payload reader handles a flat JSON object (string and boolean values) with no
 * escapes in its strings: a real task would link a JSON library.
 */
#include <ctype.h>

#include "sluice_task.h"

typedef struct {
    char secret[129]; /* names are at most 128 characters */
    char url[2048];
    bool fail;
} args_t;

/* Copies the string value at p (after its opening quote) into out; NULL or what is wrong. */
static const char *read_string(const uint8_t **p, const uint8_t *end, char *out, size_t cap, const char *what) {
    const uint8_t *s = *p;
    while (*p < end && **p != '"' && **p != '\\') (*p)++;
    if (*p >= end || **p != '"') return "unsupported string (escapes are not read)";
    size_t len = (size_t)(*p - s);
    (*p)++;
    if (!out) return NULL;
    if (len >= cap) return what;
    memcpy(out, s, len);
    out[len] = 0;
    return NULL;
}

/* Reads {"key": value, ...}; NULL on success, else what is wrong. */
static const char *read_args(const uint8_t *p, const uint8_t *end, args_t *args) {
#define SKIP_WS() while (p < end && isspace(*p)) p++
    SKIP_WS();
    if (p >= end || *p++ != '{') return "payload is not a JSON object";
    SKIP_WS();
    while (p < end && *p != '}') {
        if (*p++ != '"') return "expected a key";
        char key[64];
        const char *bad = read_string(&p, end, key, sizeof key, "key is too long");
        if (bad) return bad;
        SKIP_WS();
        if (p >= end || *p++ != ':') return "expected ':'";
        SKIP_WS();
        if (p < end && *p == '"') {
            p++;
            char *out = strcmp(key, "secret") == 0 ? args->secret : strcmp(key, "url") == 0 ? args->url : NULL;
            size_t cap = out == args->secret ? sizeof args->secret : sizeof args->url;
            bad = read_string(&p, end, out, cap, "value is too long");
            if (bad) return bad;
        } else if (p + 4 <= end && memcmp(p, "true", 4) == 0) {
            p += 4;
            if (strcmp(key, "fail") == 0) args->fail = true;
        } else if (p + 5 <= end && memcmp(p, "false", 5) == 0) {
            p += 5;
        } else {
            return "unsupported value (strings and booleans only)";
        }
        SKIP_WS();
        if (p < end && *p == ',') {
            p++;
            SKIP_WS();
        } else if (p >= end || *p != '}') {
            return "expected ',' or '}'";
        }
    }
    if (p >= end) return "expected '}'";
#undef SKIP_WS
    return args->secret[0] && args->url[0] ? NULL : "payload needs a string `secret` and a string `url`";
}

static const char BODY[] = "{\"amount\":42,\"memo\":\"café ✓\"}";

static sluice_result_t run(const sluice_job_t *job) {
    args_t args = {{0}, {0}, false};
    const char *bad = read_args(job->payload.ptr, job->payload.ptr + job->payload.len, &args);
    if (bad) return sluice_fatal("%s", bad);

    sluice_secret_t token;
    sluice_secret_error_t secret_error;
    if (!sluice_secret_get(args.secret, &token, &secret_error)) return sluice_fatal("%s", secret_error.message);
    sluice_log_info("calling %s with token %s", args.url, token.value);
    printf("stdout also sees %s\n", token.value);
    fflush(stdout);

    size_t auth_len = token.len + sizeof "Bearer ";
    char *auth = (char *)malloc(auth_len);
    if (!auth) abort();
    snprintf(auth, auth_len, "Bearer %s", token.value);
    sluice_http_header_t headers[] = {
        {"authorization", auth, 0},
        {"content-type", "application/json", 0},
    };
    sluice_http_request_t req = {0};
    req.method = "POST";
    req.url = args.url;
    req.headers = headers;
    req.header_count = sizeof headers / sizeof headers[0];
    req.body = BODY;
    req.body_len = sizeof BODY - 1;
    sluice_http_response_t res;
    sluice_http_error_t http_error;
    bool sent = sluice_http_send(&req, &res, &http_error);
    memset(auth, 0, auth_len);
    free(auth);

    sluice_result_t result;
    if (!sent) {
        result = sluice_retry("%s", http_error.message);
    } else if (args.fail) {
        result = sluice_retry("%s answered %u to token %s", args.url, res.status, token.value);
    } else if (res.status >= 400 && res.status < 500) {
        result = sluice_fatal("%s answered %u: the request is refused", args.url, res.status);
    } else if (res.status >= 500) {
        result = sluice_retry("%s answered %u: try again later", args.url, res.status);
    } else {
        char out[32];
        snprintf(out, sizeof out, "{\"status\":%u}", res.status);
        result = sluice_ok_str(out);
    }
    sluice_http_response_free(&res);
    sluice_secret_free(&token);
    return result;
}

SLUICE_TASK(run)
