/*
 * `durable-steps` (contract 0.3): payload {"urls": ["...", ...], "pause_after": {"2":
 * 3000}, "sleep_after": {"1": 5000}, "signal_before": {"3": "approve"}}; POSTs
 * {"step": i} to each URL in order (steps numbered from 1) and completes with the JSON
 * list of response bodies (as text). Every field but `urls` is optional, keyed by step:
 * - `pause_after`: after step i, busy-wait that many milliseconds, reading the clock, so
 *   that a test can kill the worker in the middle;
 * - `sleep_after`: after step i (and its pause), sluice_sleep_ms that many milliseconds
 *   (a long one suspends a durable run; not durable, it sleeps in place);
 * - `signal_before`: before step i, sluice_await_signal(name) with no timeout, and send
 *   {"step": i, "signal": <the signal's JSON payload>} for that step instead. Not durable,
 *   the wait is refused: fatal("not-durable: ...");
 * - `snooze_when_busy_ms` (not keyed by step): a 429 or 503 answer snoozes the job
 *   (sluice_snooze_when_busy: for its Retry-After, or this many milliseconds without one,
 *   at most an hour) and the step is sent again after it.
 *
 * Any other non-2xx answer, or a network failure, is retried. The same task as the Rust sample
 * sample-tasks/durable-steps; built against contract 0.3 (bindings/v0.3, wit/v0.3).
 *
 * The payload reader handles exactly this shape (strings without escapes other than \" \\
 * \/, non-negative integers): a real task would link a JSON library.
 */
#include <ctype.h>
#include <time.h>

#include "sluice_task.h"

#define MAX_STEPS 64

/* One `"step": value` of a map: a number of milliseconds or a signal name. */
typedef struct {
    unsigned long step;
    uint64_t ms;
    char *name;
} step_value_t;

typedef struct {
    char *urls[MAX_STEPS];
    size_t url_count;
    step_value_t pause_after[MAX_STEPS], sleep_after[MAX_STEPS], signal_before[MAX_STEPS];
    size_t pause_count, sleep_count, signal_count;
    bool snooze_when_busy;
    uint64_t snooze_when_busy_ms;
} args_t;

typedef struct {
    const uint8_t *p, *end;
} reader_t;

static void skip_ws(reader_t *r) {
    while (r->p < r->end && isspace(*r->p)) r->p++;
}

static bool eat(reader_t *r, char c) {
    skip_ws(r);
    if (r->p < r->end && *r->p == (uint8_t)c) {
        r->p++;
        return true;
    }
    return false;
}

/* A JSON string into a malloc'ed, NUL-terminated copy; NULL if it is not one we read. */
static char *read_string(reader_t *r) {
    if (!eat(r, '"')) return NULL;
    char *out = (char *)malloc((size_t)(r->end - r->p) + 1);
    if (!out) abort();
    size_t n = 0;
    while (r->p < r->end && *r->p != '"') {
        uint8_t c = *r->p++;
        if (c == '\\') {
            if (r->p >= r->end || (*r->p != '"' && *r->p != '\\' && *r->p != '/')) break;
            c = *r->p++;
        }
        out[n++] = (char)c;
    }
    if (r->p >= r->end || *r->p != '"') {
        free(out);
        return NULL;
    }
    r->p++;
    out[n] = 0;
    return out;
}

static bool read_number(reader_t *r, uint64_t *n) {
    skip_ws(r);
    if (r->p >= r->end || !isdigit(*r->p)) return false;
    for (*n = 0; r->p < r->end && isdigit(*r->p); r->p++) *n = *n * 10 + (uint64_t)(*r->p - '0');
    return true;
}

/* {"<step>": number} (names NULL) or {"<step>": "name"} (names set) into `values`. */
static const char *read_map(reader_t *r, step_value_t *values, size_t *count, bool names) {
    if (!eat(r, '{')) return "expected an object keyed by step";
    if (eat(r, '}')) return NULL;
    do {
        char *key = read_string(r);
        if (!key) return "expected a step number as a key";
        char *rest;
        unsigned long step = strtoul(key, &rest, 10);
        bool numeric = *key && !*rest;
        free(key);
        if (!numeric) return "a key is not a step number";
        if (!eat(r, ':')) return "expected ':'";
        if (*count >= MAX_STEPS) return "too many steps";
        step_value_t *v = &values[(*count)++];
        v->step = step;
        if (names) {
            if (!(v->name = read_string(r))) return "expected a signal name";
        } else if (!read_number(r, &v->ms)) {
            return "expected a number of milliseconds";
        }
    } while (eat(r, ','));
    return eat(r, '}') ? NULL : "expected ',' or '}'";
}

/* Reads the payload; NULL on success, else what is wrong. */
static const char *read_args(reader_t *r, args_t *args) {
    if (!eat(r, '{')) return "payload is not a JSON object";
    bool has_urls = false;
    if (!eat(r, '}')) do {
            char *key = read_string(r);
            if (!key) return "expected a key";
            const char *bad = NULL;
            if (!eat(r, ':')) {
                bad = "expected ':'";
            } else if (strcmp(key, "urls") == 0) {
                has_urls = true;
                if (!eat(r, '[')) {
                    bad = "`urls` is not a list";
                } else if (!eat(r, ']')) {
                    do {
                        if (args->url_count >= MAX_STEPS) { bad = "too many urls"; break; }
                        if (!(args->urls[args->url_count++] = read_string(r))) { bad = "a url is not a string"; break; }
                    } while (eat(r, ','));
                    if (!bad && !eat(r, ']')) bad = "expected ',' or ']'";
                }
            } else if (strcmp(key, "pause_after") == 0) {
                bad = read_map(r, args->pause_after, &args->pause_count, false);
            } else if (strcmp(key, "sleep_after") == 0) {
                bad = read_map(r, args->sleep_after, &args->sleep_count, false);
            } else if (strcmp(key, "signal_before") == 0) {
                bad = read_map(r, args->signal_before, &args->signal_count, true);
            } else if (strcmp(key, "snooze_when_busy_ms") == 0) {
                args->snooze_when_busy = true;
                if (!read_number(r, &args->snooze_when_busy_ms)) bad = "`snooze_when_busy_ms` is not a number";
            } else {
                bad = "unknown key (urls, pause_after, sleep_after, signal_before, snooze_when_busy_ms)";
            }
            free(key);
            if (bad) return bad;
        } while (eat(r, ','));
    if (!eat(r, '}')) return "expected ',' or '}'";
    return has_urls ? NULL : "payload needs a list `urls`";
}

static const step_value_t *at(const step_value_t *values, size_t count, unsigned long step) {
    for (size_t i = 0; i < count; i++)
        if (values[i].step == step) return &values[i];
    return NULL;
}

/* Appends `bytes` as a JSON string (quotes included) at out + o, invalid UTF-8 replaced by
 * U+FFFD (like Rust's String::from_utf8_lossy). `out` has room for 6 * len + 3 bytes more. */
static size_t json_lossy(char *out, size_t o, const uint8_t *bytes, size_t len) {
    out[o++] = '"';
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
    out[o++] = '"';
    out[o] = 0;
    return o;
}

/* Waits `ms` reading the clock (every 10 ms: a few hundred reads, not millions). */
static void pause_ms(uint64_t ms) {
    struct timespec start, now, tick = {0, 10 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t elapsed = (uint64_t)(now.tv_sec - start.tv_sec) * 1000 +
                           (uint64_t)((now.tv_nsec - start.tv_nsec) / 1000000);
        if (elapsed >= ms) return;
        nanosleep(&tick, NULL);
    }
}

static sluice_result_t steps(const args_t *args) {
    char *out = (char *)malloc(3);
    if (!out) abort();
    size_t out_len = 0;
    out[out_len++] = '[';
    for (size_t i = 0; i < args->url_count; i++) {
        unsigned long step = (unsigned long)i + 1;
        const char *url = args->urls[i];
        char *body;
        size_t body_len;
        const step_value_t *signal_name = at(args->signal_before, args->signal_count, step);
        if (signal_name) {
            sluice_signal_t signal;
            sluice_wait_error_t wait_error;
            if (!sluice_await_signal(signal_name->name, SLUICE_NO_TIMEOUT, &signal, &wait_error)) {
                free(out);
                return sluice_fatal("%s", wait_error.message);
            }
            /* No timeout: it cannot come back empty; `null` is what a bare signal says. */
            const char *payload = signal.received ? signal.payload : "null";
            body_len = (size_t)snprintf(NULL, 0, "{\"step\":%lu,\"signal\":%s}", step, payload);
            body = (char *)malloc(body_len + 1);
            if (!body) abort();
            snprintf(body, body_len + 1, "{\"step\":%lu,\"signal\":%s}", step, payload);
            sluice_signal_free(&signal);
        } else {
            body = (char *)malloc(32);
            if (!body) abort();
            body_len = (size_t)snprintf(body, 32, "{\"step\":%lu}", step);
        }
        sluice_http_response_t res;
        sluice_http_error_t err;
        bool sent;
        while ((sent = sluice_http_post(url, "application/json", body, body_len, &res, &err)) &&
               args->snooze_when_busy && sluice_snooze_when_busy(&res, args->snooze_when_busy_ms))
            sluice_http_response_free(&res);
        free(body);
        if (!sent) {
            free(out);
            return sluice_retry("step %lu: %s", step, err.message);
        }
        if (res.status < 200 || res.status > 299) {
            unsigned status = res.status;
            sluice_http_response_free(&res);
            free(out);
            return sluice_retry("step %lu: %s answered %u", step, url, status);
        }
        out = (char *)realloc(out, out_len + 6 * res.body_len + 5);
        if (!out) abort();
        if (i > 0) out[out_len++] = ',';
        out_len = json_lossy(out, out_len, res.body, res.body_len);
        sluice_http_response_free(&res);
        const step_value_t *pause = at(args->pause_after, args->pause_count, step);
        if (pause) pause_ms(pause->ms);
        const step_value_t *sleep = at(args->sleep_after, args->sleep_count, step);
        if (sleep) sluice_sleep_ms(sleep->ms);
    }
    out[out_len++] = ']';
    sluice_result_t result = sluice_ok(out, out_len);
    free(out);
    return result;
}

static void free_args(args_t *args) {
    for (size_t i = 0; i < args->url_count; i++) free(args->urls[i]);
    for (size_t i = 0; i < args->signal_count; i++) free(args->signal_before[i].name);
}

static sluice_result_t run(const sluice_job_t *job) {
    static args_t args; /* large: not on the stack */
    memset(&args, 0, sizeof args);
    reader_t r = {job->payload.ptr, job->payload.ptr + job->payload.len};
    const char *bad = read_args(&r, &args);
    sluice_result_t result = bad ? sluice_fatal("%s", bad) : steps(&args);
    free_args(&args);
    return result;
}

SLUICE_TASK(run)
