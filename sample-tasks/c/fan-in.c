/*
 * `fan-in` (contract 0.3): payload {"children": N, "child_type": "echo"} (`child_type`
 * optional, default `echo`). Enqueues N follow-up jobs of `child_type`, child i (from 0)
 * with the payload {"i": i}, awaits them all with sluice_await_jobs, and completes with
 * {"completed": <how many completed>, "outputs": [...]}: each child's output as text, in
 * enqueue order (null for a child that did not complete).
 *
 * Meant for a durable type (`sluice types set T --durable`): the await suspends the run,
 * the suspension inserts the children, and the run after the last one finishes replays
 * the enqueues (same ids, no new jobs) and returns their outcomes. Not durable, the await
 * is refused: fatal("not-durable: ...") (and no child is created, since the attempt does
 * not complete). Any refused wait or enqueue is fatal with its message. The same task as
 * the Rust sample sample-tasks/fan-in; built against contract 0.3 (bindings/v0.3).
 *
 * The payload reader finds the two keys by name in a flat JSON object with no escapes in
 * `child_type`: a real task would link a JSON library.
 */
#include <ctype.h>

#include "sluice_task.h"

/* The text after `"key"` and its ':' (NULL if the key is absent). */
static const char *value_of(const char *json, const char *key) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *p = strstr(json, quoted);
    if (!p) return NULL;
    p += strlen(quoted);
    while (isspace((unsigned char)*p)) p++;
    if (*p++ != ':') return NULL;
    while (isspace((unsigned char)*p)) p++;
    return p;
}

/* Appends `bytes` as a JSON string (quotes included) at out + o; `out` has room for
 * 6 * len + 3 bytes more. Control characters, quotes and backslashes are escaped; other
 * bytes are copied (children's outputs are UTF-8 text). */
static size_t json_string(char *out, size_t o, const char *bytes, size_t len) {
    out[o++] = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)bytes[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)sprintf(out + o, "\\u%04x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o++] = '"';
    out[o] = 0;
    return o;
}

static sluice_result_t run(const sluice_job_t *job) {
    char json[4096];
    if (job->payload.len >= sizeof json) return sluice_fatal("payload is too long");
    memcpy(json, job->payload.ptr, job->payload.len);
    json[job->payload.len] = 0;
    const char *children = value_of(json, "children");
    if (!children || !isdigit((unsigned char)*children)) return sluice_fatal("payload needs a number `children`");
    size_t n = (size_t)strtoul(children, NULL, 10);
    if (n > 1000) return sluice_fatal("at most 1000 children (await-jobs takes 1000 ids)");
    char child_type[129] = "echo";
    const char *type = value_of(json, "child_type");
    if (type && *type == '"') {
        size_t len = 0;
        for (type++; *type && *type != '"' && len < sizeof child_type - 1; type++) child_type[len++] = *type;
        child_type[len] = 0;
    }

    uint64_t *ids = (uint64_t *)malloc((n ? n : 1) * sizeof *ids);
    if (!ids) abort();
    for (size_t i = 0; i < n; i++) {
        char payload[32];
        int size = snprintf(payload, sizeof payload, "{\"i\":%zu}", i);
        sluice_enqueue_error_t err;
        if (!sluice_enqueue_id(child_type, payload, (size_t)size, NULL, &ids[i], &err)) {
            free(ids);
            return sluice_fatal("follow-up job %zu refused: %s", i, err.message);
        }
    }
    sluice_child_outcome_t *outcomes;
    sluice_wait_error_t wait_error;
    bool done = sluice_await_jobs(ids, n, &outcomes, &wait_error);
    free(ids);
    if (!done) return sluice_fatal("%s", wait_error.message);

    size_t cap = 64, completed = 0;
    for (size_t i = 0; i < n; i++) {
        cap += outcomes[i].output ? 6 * outcomes[i].output_len + 4 : 5; /* and a comma */
        if (outcomes[i].state == SLUICE_CHILD_COMPLETED) completed++;
    }
    char *out = (char *)malloc(cap);
    if (!out) abort();
    size_t o = (size_t)sprintf(out, "{\"completed\":%zu,\"outputs\":[", completed);
    for (size_t i = 0; i < n; i++) {
        if (i > 0) out[o++] = ',';
        if (outcomes[i].output) {
            o = json_string(out, o, outcomes[i].output, outcomes[i].output_len);
        } else {
            memcpy(out + o, "null", 4);
            o += 4;
        }
    }
    memcpy(out + o, "]}", 2);
    o += 2;
    sluice_child_outcomes_free(outcomes, n);
    sluice_result_t result = sluice_ok(out, o);
    free(out);
    return result;
}

SLUICE_TASK(run)
