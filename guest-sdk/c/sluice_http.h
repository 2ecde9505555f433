/*
 * sluice_http.h — outbound HTTP from a C task (contract 0.2 and later): a blocking client on
 * wasi:http/outgoing-handler (sluice_http_send, sluice_http_get, sluice_http_post), and
 * what a response's Retry-After asks for (sluice_http_retry_after_ms).
 * Included by sluice_task.h when the bindings have wasi:http (bindings/v0.2, bindings/v0.3);
 * include sluice_task.h, not this file.
 */
#ifndef SLUICE_HTTP_H
#define SLUICE_HTTP_H

#include <time.h>

#include "sluice_task.h"

#ifdef WASI_HTTP_TYPES_METHOD_GET
/*
 * Outbound HTTP (contract 0.2): a small blocking client on wasi:http/outgoing-handler.
 *
 *   sluice_http_response_t res;
 *   sluice_http_error_t err;
 *   if (!sluice_http_get("https://api.example.com/rates", &res, &err))
 *       return sluice_retry("%s", err.message);   // err.code: "HTTP-request-denied", ...
 *   ... res.status, res.headers[i].name / .value, res.body (body_len bytes) ...
 *   uint64_t wait_ms;   // what its Retry-After asks for, if it has a usable one:
 *   if (sluice_http_retry_after_ms(&res, &wait_ms)) ...
 *   sluice_http_response_free(&res);
 *
 * The host decides what a task may reach (the job type's allow list, the operator's network
 * policy, per-attempt request counts, body caps, timeouts). A refused or failed request
 * returns false with err.code naming the wasi:http error-code case (`HTTP-request-denied`,
 * `destination-IP-prohibited`, `connection-timeout`, ...; `invalid-request` for a request
 * this client could not build) and err.message "HTTP request failed: <code> (<details>)".
 * Redirects are returned, never followed.
 */

/* A request or response header. Response names are lowercase; values are NUL-terminated
 * copies (value_len excludes the NUL). */
typedef struct sluice_http_header_t {
    const char *name;
    const char *value;
    size_t value_len;
} sluice_http_header_t;

typedef struct sluice_http_request_t {
    const char *method;                  /* "GET", "POST", ...; NULL is GET */
    const char *url;                     /* absolute http:// or https:// URL */
    const sluice_http_header_t *headers; /* value_len 0: strlen(value) */
    size_t header_count;
    const void *body;
    size_t body_len;
    uint64_t timeout_ms; /* connect, first byte and between bytes; 0: the host's caps */
} sluice_http_request_t;

typedef struct sluice_http_response_t {
    uint16_t status;
    sluice_http_header_t *headers;
    size_t header_count;
    uint8_t *body; /* body_len bytes, followed by a NUL */
    size_t body_len;
} sluice_http_response_t;

typedef struct sluice_http_error_t {
    const char *code;  /* the wasi:http error-code case, e.g. "HTTP-request-denied" */
    char message[256]; /* "HTTP request failed: <code> (<details>)" */
} sluice_http_error_t;

__attribute__((format(printf, 3, 4)))
static inline bool sluice_http_fail(sluice_http_error_t *err, const char *code, const char *fmt, ...) {
    char details[200];
    va_list args;
    va_start(args, fmt);
    vsnprintf(details, sizeof details, fmt, args);
    va_end(args);
    err->code = code;
    snprintf(err->message, sizeof err->message, "HTTP request failed: %s (%s)", code, details);
    return false;
}

/* Records an error-code (and frees its payload). */
static inline bool sluice_http_fail_code(sluice_http_error_t *err, wasi_http_types_error_code_t *code) {
    /* The error-code cases in the WIT's order (their tags). */
    static const char *const names[] = {
        "DNS-timeout", "DNS-error", "destination-not-found", "destination-unavailable",
        "destination-IP-prohibited", "destination-IP-unroutable", "connection-refused",
        "connection-terminated", "connection-timeout", "connection-read-timeout",
        "connection-write-timeout", "connection-limit-reached", "TLS-protocol-error",
        "TLS-certificate-error", "TLS-alert-received", "HTTP-request-denied",
        "HTTP-request-length-required", "HTTP-request-body-size", "HTTP-request-method-invalid",
        "HTTP-request-URI-invalid", "HTTP-request-URI-too-long", "HTTP-request-header-section-size",
        "HTTP-request-header-size", "HTTP-request-trailer-section-size", "HTTP-request-trailer-size",
        "HTTP-response-incomplete", "HTTP-response-header-section-size", "HTTP-response-header-size",
        "HTTP-response-body-size", "HTTP-response-trailer-section-size", "HTTP-response-trailer-size",
        "HTTP-response-transfer-coding", "HTTP-response-content-coding", "HTTP-response-timeout",
        "HTTP-upgrade-failed", "HTTP-protocol-error", "loop-detected", "configuration-error",
        "internal-error",
    };
    const char *name = code->tag < sizeof names / sizeof names[0] ? names[code->tag] : "other";
    if (code->tag == WASI_HTTP_TYPES_ERROR_CODE_INTERNAL_ERROR && code->val.internal_error.is_some) {
        task_string_t *text = &code->val.internal_error.val;
        sluice_http_fail(err, name, "%.*s", (int)text->len, (const char *)text->ptr);
    } else {
        sluice_http_fail(err, name, "%s", name);
    }
    wasi_http_types_error_code_free(code);
    return false;
}

/* Records a stream error (and drops its payload). */
static inline bool sluice_http_fail_stream(sluice_http_error_t *err, wasi_io_streams_stream_error_t *e) {
    if (e->tag == WASI_IO_STREAMS_STREAM_ERROR_CLOSED) {
        return sluice_http_fail(err, "connection-terminated", "the stream closed");
    }
    wasi_io_error_own_error_t own = e->val.last_operation_failed;
    wasi_http_types_error_code_t code;
    bool ok;
    if (wasi_http_types_http_error_code(wasi_io_error_borrow_error(own), &code)) {
        ok = sluice_http_fail_code(err, &code);
    } else {
        task_string_t text;
        wasi_io_error_method_error_to_debug_string(wasi_io_error_borrow_error(own), &text);
        ok = sluice_http_fail(err, "internal-error", "%.*s", (int)text.len, (const char *)text.ptr);
        task_string_free(&text);
    }
    wasi_io_error_error_drop_own(own);
    return ok;
}

static inline task_string_t sluice_http_str(const char *p, size_t len) {
    task_string_t s = {(uint8_t *)p, len};
    return s;
}

static inline void *sluice_http_alloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

/* Frees what sluice_http_send filled in (safe on a zeroed response). */
static inline void sluice_http_response_free(sluice_http_response_t *res) {
    for (size_t i = 0; i < res->header_count; i++) {
        free((void *)res->headers[i].name);
        free((void *)res->headers[i].value);
    }
    free(res->headers);
    free(res->body);
    memset(res, 0, sizeof *res);
}

/* The first value of header `name` (case-insensitive), or NULL. */
static inline const sluice_http_header_t *sluice_http_response_header(const sluice_http_response_t *res, const char *name) {
    for (size_t i = 0; i < res->header_count; i++) {
        if (strcasecmp(res->headers[i].name, name) == 0) return &res->headers[i];
    }
    return NULL;
}

/* `Retry-After` (RFC 9110, section 10.2.3), read exactly as the Rust SDK reads it
 * (guest-sdk/src/retry_after.rs): ASCII whitespace around it ignored; delay-seconds
 * (saturating), or an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`); the obsolete RFC 850
 * and asctime forms are refused. The helpers below are sluice_http_retry_after_ms's. */
static inline bool sluice_http_ascii_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

static inline bool sluice_http_digits(const char *p, size_t len, uint64_t *n) {
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        uint64_t d = (uint64_t)(p[i] - '0');
        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
    }
    *n = v;
    return len > 0;
}

/* Seconds since the Unix epoch of an IMF-fixdate (exactly 29 bytes), or -1. The day is
 * not checked against its month (as in the Rust SDK: `31 Feb` is `03 Mar`). */
static inline int64_t sluice_http_imf_fixdate(const char *p, size_t len) {
    static const char weekdays[] = "Mon,Tue,Wed,Thu,Fri,Sat,Sun,", months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    /* Six fields split at single spaces, of lengths 4 2 3 4 8 3: spaces at 4 7 11 16 25. */
    if (len != 29 || p[4] != ' ' || p[7] != ' ' || p[11] != ' ' || p[16] != ' ' || p[25] != ' ' ||
        memcmp(p + 26, "GMT", 3) != 0)
        return -1;
    int weekday = -1, month = -1;
    for (int i = 0; i < 7; i++) if (memcmp(p, weekdays + 4 * i, 4) == 0) weekday = i;
    for (int i = 0; i < 12; i++) if (memcmp(p + 8, months + 3 * i, 3) == 0) month = i + 1;
    uint64_t day, year, clock[3];
    if (weekday < 0 || month < 0 || !sluice_http_digits(p + 5, 2, &day) || !sluice_http_digits(p + 12, 4, &year))
        return -1;
    /* The time: three runs of digits split at ':' (so `0:049:37` reads, as in Rust). */
    size_t start = 17, field = 0;
    for (size_t i = 17; i <= 25; i++) {
        if (i < 25 && p[i] != ':') continue;
        if (field == 3 || !sluice_http_digits(p + start, i - start, &clock[field++])) return -1;
        start = i + 1;
    }
    if (field != 3 || day < 1 || day > 31 || year < 1970 || clock[0] > 23 || clock[1] > 59 || clock[2] > 60)
        return -1;
    /* Days from 1970-01-01 (Howard Hinnant's days_from_civil). */
    int64_t y = (int64_t)year - (month <= 2), era = y / 400, year_of_era = y - era * 400;
    int64_t day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + (int64_t)day - 1;
    int64_t days = era * 146097 + year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year - 719468;
    return days * 86400 + (int64_t)(clock[0] * 3600 + clock[1] * 60 + clock[2]);
}

/* The milliseconds (rounded up) a `Retry-After` value of `len` bytes asks for from `now`;
 * a date in the past is 0. False when the value is neither form. */
static inline bool sluice_http_parse_retry_after(const char *p, size_t len, struct timespec now, uint64_t *ms) {
    while (len > 0 && sluice_http_ascii_space(*p)) p++, len--;
    while (len > 0 && sluice_http_ascii_space(p[len - 1])) len--;
    uint64_t seconds;
    if (sluice_http_digits(p, len, &seconds)) {
        *ms = seconds > UINT64_MAX / 1000 ? UINT64_MAX : seconds * 1000;
        return true;
    }
    int64_t at = sluice_http_imf_fixdate(p, len);
    if (at < 0) return false;
    int64_t ahead = at - (int64_t)now.tv_sec; /* whole seconds, then the fraction */
    if (ahead > 1000000000) *ms = (uint64_t)ahead * 1000;
    else if (ahead <= 0) *ms = 0;
    else *ms = (uint64_t)((ahead * 1000000000 - now.tv_nsec + 999999) / 1000000);
    return true;
}

/* How long the server asked to wait before trying again, in milliseconds: its
 * `Retry-After` header, as delay-seconds or an HTTP-date (a date in the past is 0). False
 * without one or when it is neither. sluice_snooze_when_busy (contract 0.3) snoozes for
 * it. */
static inline bool sluice_http_retry_after_ms(const sluice_http_response_t *res, uint64_t *ms) {
    const sluice_http_header_t *h = sluice_http_response_header(res, "retry-after");
    struct timespec now;
    if (!h || clock_gettime(CLOCK_REALTIME, &now) != 0) return false;
    return sluice_http_parse_retry_after(h->value, h->value_len, now, ms);
}

/* Sends the request and reads the whole response into *res (free it with
 * sluice_http_response_free). False on failure, with *err filled in and *res zeroed. */
static inline bool sluice_http_send(const sluice_http_request_t *req, sluice_http_response_t *res, sluice_http_error_t *err) {
    memset(res, 0, sizeof *res);
    /* The URL: scheme://authority/path?query (a #fragment is dropped). */
    const char *url = req->url, *sep = strstr(url, "://");
    if (!sep) return sluice_http_fail(err, "invalid-request", "URL `%s`: no scheme", url);
    const char *auth = sep + 3;
    size_t auth_len = strcspn(auth, "/?#");
    if (auth_len == 0) return sluice_http_fail(err, "invalid-request", "URL `%s`: no host", url);
    const char *tail = auth + auth_len;
    size_t tail_len = strcspn(tail, "#");
    char *path = (char *)sluice_http_alloc(tail_len + 2);
    snprintf(path, tail_len + 2, "%s%.*s", tail_len == 0 || *tail == '?' ? "/" : "", (int)tail_len, tail);
    wasi_http_types_scheme_t scheme = {0};
    size_t scheme_len = (size_t)(sep - url);
    if (scheme_len == 5 && strncasecmp(url, "https", 5) == 0) {
        scheme.tag = WASI_HTTP_TYPES_SCHEME_HTTPS;
    } else if (scheme_len == 4 && strncasecmp(url, "http", 4) == 0) {
        scheme.tag = WASI_HTTP_TYPES_SCHEME_HTTP;
    } else {
        scheme.tag = WASI_HTTP_TYPES_SCHEME_OTHER;
        scheme.val.other = sluice_http_str(url, scheme_len);
    }
    wasi_http_types_method_t method = {0};
    static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"};
    const char *m = req->method ? req->method : "GET";
    method.tag = WASI_HTTP_TYPES_METHOD_OTHER;
    method.val.other = sluice_http_str(m, strlen(m));
    for (uint8_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        if (strcasecmp(m, methods[i]) == 0) method.tag = i;
    }

    /* Headers (names lowercased), plus content-length for a body (room for one more). */
    task_tuple2_field_name_field_value_t *entries =
        (task_tuple2_field_name_field_value_t *)sluice_http_alloc((req->header_count + 1) * sizeof *entries);
    size_t entry_count = 0;
    bool has_length = false;
    for (size_t i = 0; i < req->header_count; i++) {
        const sluice_http_header_t *h = &req->headers[i];
        size_t n = strlen(h->name);
        char *lower = (char *)sluice_http_alloc(n);
        for (size_t j = 0; j < n; j++) lower[j] = (char)(h->name[j] >= 'A' && h->name[j] <= 'Z' ? h->name[j] | 0x20 : h->name[j]);
        if (n == 14 && memcmp(lower, "content-length", 14) == 0) has_length = true;
        entries[i].f0 = sluice_http_str(lower, n);
        entries[i].f1.ptr = (uint8_t *)h->value;
        entries[i].f1.len = h->value_len ? h->value_len : strlen(h->value);
        entry_count++;
    }
    /* The whole body is known: declare its length, so it is not sent chunked (which many
     * APIs refuse) and the host can refuse one over its cap before connecting. */
    char length[24];
    if (req->body_len && !has_length) {
        char *name = (char *)sluice_http_alloc(14);
        memcpy(name, "content-length", 14);
        entries[entry_count].f0 = sluice_http_str(name, 14);
        entries[entry_count].f1.ptr = (uint8_t *)length;
        entries[entry_count].f1.len = (size_t)snprintf(length, sizeof length, "%zu", req->body_len);
        entry_count++;
    }
    task_list_tuple2_field_name_field_value_t list = {entries, entry_count};
    wasi_http_types_own_fields_t fields;
    wasi_http_types_header_error_t header_error;
    bool headers_ok = wasi_http_types_static_fields_from_list(&list, &fields, &header_error);
    for (size_t i = 0; i < entry_count; i++) free(entries[i].f0.ptr);
    free(entries);
    if (!headers_ok) {
        free(path);
        return sluice_http_fail(err, "invalid-request", "headers: %s",
                                header_error.tag == 1 ? "forbidden" : header_error.tag == 2 ? "immutable" : "invalid syntax");
    }

    wasi_http_types_own_outgoing_request_t request = wasi_http_types_constructor_outgoing_request(fields);
    wasi_http_types_borrow_outgoing_request_t r = wasi_http_types_borrow_outgoing_request(request);
    task_string_t authority = sluice_http_str(auth, auth_len), path_query = sluice_http_str(path, strlen(path));
    bool set = wasi_http_types_method_outgoing_request_set_method(r, &method) &&
               wasi_http_types_method_outgoing_request_set_scheme(r, &scheme) &&
               wasi_http_types_method_outgoing_request_set_authority(r, &authority) &&
               wasi_http_types_method_outgoing_request_set_path_with_query(r, &path_query);
    free(path);
    wasi_http_types_own_outgoing_body_t body;
    if (!set || !wasi_http_types_method_outgoing_request_body(r, &body)) {
        wasi_http_types_outgoing_request_drop_own(request);
        return sluice_http_fail(err, "invalid-request", "URL `%s`", url);
    }
    wasi_http_types_own_request_options_t options;
    if (req->timeout_ms) {
        options = wasi_http_types_constructor_request_options();
        wasi_http_types_borrow_request_options_t o = wasi_http_types_borrow_request_options(options);
        uint64_t ns = req->timeout_ms > UINT64_MAX / 1000000 ? UINT64_MAX : req->timeout_ms * 1000000;
        /* Each setter only fails for a value the host cannot represent: its cap applies. */
        (void)wasi_http_types_method_request_options_set_connect_timeout(o, &ns);
        (void)wasi_http_types_method_request_options_set_first_byte_timeout(o, &ns);
        (void)wasi_http_types_method_request_options_set_between_bytes_timeout(o, &ns);
    }
    wasi_http_types_own_future_incoming_response_t future;
    wasi_http_types_error_code_t code;
    if (!wasi_http_outgoing_handler_handle(request, req->timeout_ms ? &options : NULL, &future, &code)) {
        wasi_http_types_outgoing_body_drop_own(body);
        return sluice_http_fail_code(err, &code);
    }

    /* The body; its stream must be dropped before the body is finished (or dropped). A body
     * the host stops taking (over its cap, or the request refused) closes the stream: why is
     * the response's error code, so that is read first, the body dropped unfinished. */
    wasi_http_types_own_output_stream_t out;
    if (!wasi_http_types_method_outgoing_body_write(wasi_http_types_borrow_outgoing_body(body), &out)) {
        wasi_http_types_outgoing_body_drop_own(body);
        wasi_http_types_future_incoming_response_drop_own(future);
        return sluice_http_fail(err, "invalid-request", "request body stream taken twice");
    }
    const uint8_t *bytes = (const uint8_t *)req->body;
    wasi_io_streams_stream_error_t stream_error = {0};
    bool closed = false;
    for (size_t off = 0; off < req->body_len; off += 4096) { /* the per-call limit */
        size_t n = req->body_len - off < 4096 ? req->body_len - off : 4096;
        task_list_u8_t chunk = {(uint8_t *)bytes + off, n};
        if (!wasi_io_streams_method_output_stream_blocking_write_and_flush(wasi_io_streams_borrow_output_stream(out), &chunk, &stream_error)) {
            closed = stream_error.tag == WASI_IO_STREAMS_STREAM_ERROR_CLOSED;
            if (closed) break;
            wasi_io_streams_output_stream_drop_own(out);
            wasi_http_types_outgoing_body_drop_own(body);
            wasi_http_types_future_incoming_response_drop_own(future);
            return sluice_http_fail_stream(err, &stream_error);
        }
    }
    wasi_io_streams_output_stream_drop_own(out);
    if (closed) {
        wasi_http_types_outgoing_body_drop_own(body);
    } else if (!wasi_http_types_static_outgoing_body_finish(body, NULL, &code)) {
        wasi_http_types_future_incoming_response_drop_own(future);
        return sluice_http_fail_code(err, &code);
    }

    /* Wait for the response head. */
    wasi_http_types_own_pollable_t ready =
        wasi_http_types_method_future_incoming_response_subscribe(wasi_http_types_borrow_future_incoming_response(future));
    wasi_io_poll_method_pollable_block(wasi_io_poll_borrow_pollable(ready));
    wasi_io_poll_pollable_drop_own(ready);
    wasi_http_types_result_result_own_incoming_response_error_code_void_t got;
    bool is_ready = wasi_http_types_method_future_incoming_response_get(wasi_http_types_borrow_future_incoming_response(future), &got);
    wasi_http_types_future_incoming_response_drop_own(future);
    if (!is_ready) return sluice_http_fail(err, "invalid-request", "response not ready after waiting for it");
    if (got.is_err) return sluice_http_fail(err, "invalid-request", "response taken twice");
    if (got.val.ok.is_err) return sluice_http_fail_code(err, &got.val.ok.val.err);
    wasi_http_types_own_incoming_response_t response = got.val.ok.val.ok;
    if (closed) {
        wasi_http_types_incoming_response_drop_own(response);
        return sluice_http_fail_stream(err, &stream_error);
    }
    wasi_http_types_borrow_incoming_response_t resp = wasi_http_types_borrow_incoming_response(response);

    res->status = wasi_http_types_method_incoming_response_status(resp);
    wasi_http_types_own_headers_t headers = wasi_http_types_method_incoming_response_headers(resp);
    task_list_tuple2_field_name_field_value_t received;
    wasi_http_types_method_fields_entries(wasi_http_types_borrow_fields(headers), &received);
    wasi_http_types_fields_drop_own(headers);
    res->headers = (sluice_http_header_t *)sluice_http_alloc(received.len * sizeof *res->headers);
    res->header_count = received.len;
    for (size_t i = 0; i < received.len; i++) {
        task_tuple2_field_name_field_value_t *e = &received.ptr[i];
        char *name = (char *)sluice_http_alloc(e->f0.len + 1), *value = (char *)sluice_http_alloc(e->f1.len + 1);
        memcpy(name, e->f0.ptr, e->f0.len);
        name[e->f0.len] = 0;
        memcpy(value, e->f1.ptr, e->f1.len);
        value[e->f1.len] = 0;
        res->headers[i].name = name;
        res->headers[i].value = value;
        res->headers[i].value_len = e->f1.len;
    }
    task_list_tuple2_field_name_field_value_free(&received);

    /* The whole body. */
    wasi_http_types_own_incoming_body_t incoming;
    wasi_http_types_own_input_stream_t in;
    if (!wasi_http_types_method_incoming_response_consume(resp, &incoming)) {
        wasi_http_types_incoming_response_drop_own(response);
        sluice_http_response_free(res);
        return sluice_http_fail(err, "invalid-request", "response body taken twice");
    }
    if (!wasi_http_types_method_incoming_body_stream(wasi_http_types_borrow_incoming_body(incoming), &in)) {
        wasi_http_types_incoming_body_drop_own(incoming);
        wasi_http_types_incoming_response_drop_own(response);
        sluice_http_response_free(res);
        return sluice_http_fail(err, "invalid-request", "response body stream taken twice");
    }
    size_t cap = 0;
    for (;;) {
        task_list_u8_t chunk;
        wasi_io_streams_stream_error_t stream_error;
        if (!wasi_io_streams_method_input_stream_blocking_read(wasi_io_streams_borrow_input_stream(in), 64 * 1024, &chunk, &stream_error)) {
            if (stream_error.tag == WASI_IO_STREAMS_STREAM_ERROR_CLOSED) break;
            wasi_io_streams_input_stream_drop_own(in);
            wasi_http_types_incoming_body_drop_own(incoming);
            wasi_http_types_incoming_response_drop_own(response);
            sluice_http_response_free(res);
            return sluice_http_fail_stream(err, &stream_error);
        }
        if (res->body_len + chunk.len + 1 > cap) {
            cap = (res->body_len + chunk.len + 1) * 2;
            res->body = (uint8_t *)realloc(res->body, cap);
            if (!res->body) abort();
        }
        if (chunk.len) memcpy(res->body + res->body_len, chunk.ptr, chunk.len);
        res->body_len += chunk.len;
        task_list_u8_free(&chunk);
    }
    if (!res->body) res->body = (uint8_t *)sluice_http_alloc(1);
    res->body[res->body_len] = 0;
    wasi_io_streams_input_stream_drop_own(in);
    wasi_http_types_future_trailers_drop_own(wasi_http_types_static_incoming_body_finish(incoming));
    wasi_http_types_incoming_response_drop_own(response);
    return true;
}

/* GET url. */
static inline bool sluice_http_get(const char *url, sluice_http_response_t *res, sluice_http_error_t *err) {
    sluice_http_request_t req = {0};
    req.url = url;
    return sluice_http_send(&req, res, err);
}

/* POST url with a body and its content type (e.g. "application/json"). */
static inline bool sluice_http_post(const char *url, const char *content_type, const void *body, size_t body_len,
                                    sluice_http_response_t *res, sluice_http_error_t *err) {
    sluice_http_header_t type = {"content-type", content_type, 0};
    sluice_http_request_t req = {0};
    req.method = "POST";
    req.url = url;
    req.headers = &type;
    req.header_count = content_type ? 1 : 0;
    req.body = body;
    req.body_len = body_len;
    return sluice_http_send(&req, res, err);
}
#endif /* WASI_HTTP_TYPES_METHOD_GET */

#endif /* SLUICE_HTTP_H */
