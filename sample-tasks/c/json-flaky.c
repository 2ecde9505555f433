/*
 * `json-flaky`: payload {"succeed_on": N}. Attempts before N ask for a retry; attempt N (or
 * later) completes with {"succeeded_on": N}. A payload that is not JSON, or has no positive
 * integer `succeed_on` at its top level, is a fatal error.
 *
 * C has no JSON in its standard library: a small validating reader (RFC 8259 syntax, no
 * unescaping) stands in for the library a real task would link (cJSON, jsmn, ...).
 */
#include <ctype.h>

#include "sluice_task.h"

typedef struct {
    const uint8_t *p, *end;
    const char *error; /* first syntax error, or NULL */
    long long succeed_on; /* top-level "succeed_on" when it is an integer, else -1 */
} reader_t;

static void skip_ws(reader_t *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static bool fail(reader_t *r, const char *what) {
    if (!r->error) r->error = what;
    return false;
}

static bool literal(reader_t *r, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return fail(r, "unexpected character");
    r->p += n;
    return true;
}

/* A string; sets start and len to its raw (still escaped) contents. */
static bool string(reader_t *r, const uint8_t **start, size_t *len) {
    if (r->p >= r->end || *r->p != '"') return fail(r, "expected a string");
    const uint8_t *s = ++r->p;
    while (r->p < r->end && *r->p != '"') {
        if (*r->p < 0x20) return fail(r, "control character in a string");
        if (*r->p == '\\' && ++r->p >= r->end) break;
        r->p++;
    }
    if (r->p >= r->end) return fail(r, "unterminated string");
    *start = s;
    *len = (size_t)(r->p - s);
    r->p++;
    return true;
}

/* A number; sets *integer to its value when it is a plain non-negative integer, else -1. */
static bool number(reader_t *r, long long *integer) {
    const uint8_t *s = r->p;
    bool plain = true;
    if (r->p < r->end && *r->p == '-') { r->p++; plain = false; }
    if (r->p >= r->end || !isdigit(*r->p)) return fail(r, "expected a value");
    if (*r->p == '0' && r->p + 1 < r->end && isdigit(r->p[1])) return fail(r, "leading zero in a number");
    long long value = 0;
    while (r->p < r->end && isdigit(*r->p)) {
        if (value < 1000000000LL) value = value * 10 + (*r->p - '0'); else plain = false;
        r->p++;
    }
    if (r->p < r->end && *r->p == '.') {
        plain = false;
        if (++r->p >= r->end || !isdigit(*r->p)) return fail(r, "bad fraction");
        while (r->p < r->end && isdigit(*r->p)) r->p++;
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        plain = false;
        r->p++;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
        if (r->p >= r->end || !isdigit(*r->p)) return fail(r, "bad exponent");
        while (r->p < r->end && isdigit(*r->p)) r->p++;
    }
    *integer = plain && r->p > s ? value : -1;
    return true;
}

static bool value(reader_t *r, int depth, long long *integer);

static bool object(reader_t *r, int depth) {
    r->p++; /* { */
    skip_ws(r);
    if (r->p < r->end && *r->p == '}') { r->p++; return true; }
    for (;;) {
        const uint8_t *key;
        size_t key_len;
        long long integer = -1;
        skip_ws(r);
        if (!string(r, &key, &key_len)) return false;
        skip_ws(r);
        if (r->p >= r->end || *r->p != ':') return fail(r, "expected ':'");
        r->p++;
        if (!value(r, depth + 1, &integer)) return false;
        if (depth == 0 && key_len == 10 && memcmp(key, "succeed_on", 10) == 0) r->succeed_on = integer;
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') { r->p++; continue; }
        if (r->p < r->end && *r->p == '}') { r->p++; return true; }
        return fail(r, "expected ',' or '}'");
    }
}

static bool array(reader_t *r, int depth) {
    r->p++; /* [ */
    skip_ws(r);
    if (r->p < r->end && *r->p == ']') { r->p++; return true; }
    for (;;) {
        long long ignored;
        if (!value(r, depth + 1, &ignored)) return false;
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') { r->p++; continue; }
        if (r->p < r->end && *r->p == ']') { r->p++; return true; }
        return fail(r, "expected ',' or ']'");
    }
}

static bool value(reader_t *r, int depth, long long *integer) {
    const uint8_t *s;
    size_t n;
    *integer = -1;
    if (depth > 64) return fail(r, "nested too deeply");
    skip_ws(r);
    if (r->p >= r->end) return fail(r, "unexpected end of input");
    switch (*r->p) {
        case '{': return object(r, depth);
        case '[': return array(r, depth);
        case '"': return string(r, &s, &n);
        case 't': return literal(r, "true");
        case 'f': return literal(r, "false");
        case 'n': return literal(r, "null");
        default: return number(r, integer);
    }
}

static sluice_result_t run(const sluice_job_t *job) {
    reader_t r = {job->payload.ptr, job->payload.ptr + job->payload.len, NULL, -1};
    long long ignored;
    bool top_object = false;
    skip_ws(&r);
    top_object = r.p < r.end && *r.p == '{';
    if (value(&r, 0, &ignored)) {
        skip_ws(&r);
        if (r.p != r.end) fail(&r, "trailing characters");
    }
    if (r.error) {
        return sluice_fatal("payload is not valid JSON: %s at byte %zu", r.error,
                            (size_t)(r.p - job->payload.ptr));
    }
    if (!top_object || r.succeed_on < 1) {
        return sluice_fatal("succeed_on must be a positive integer");
    }
    if ((long long)job->attempt < r.succeed_on) {
        return sluice_retry("attempt %u of %lld failed on purpose", job->attempt, r.succeed_on);
    }
    sluice_log_info("succeeded on attempt %u", job->attempt);
    char out[64];
    snprintf(out, sizeof out, "{\"succeeded_on\":%u}", job->attempt);
    return sluice_ok_str(out);
}

SLUICE_TASK(run)
