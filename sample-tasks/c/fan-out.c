/*
 * `fan-out`: payload {"type": "echo", "count": N}; enqueues N follow-up jobs of `type`,
 * child i with the payload {"n": i, "attempt": A}. They exist only if this attempt
 * completes. A refused enqueue fails the job permanently, naming why. Completes with
 * {"enqueued": N}. The same task as the Rust sample sample-tasks/fan-out (its core);
 * built against contract 0.2 (bindings/v0.2).
 *
 * The payload reader finds the two keys by name in a flat JSON object with no escapes
 * in `type`: a real task would link a JSON library.
 */
#include <ctype.h>
#include <stdio.h>

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

static sluice_result_t run(const sluice_job_t *job) {
    char json[4096];
    if (job->payload.len >= sizeof json) return sluice_fatal("payload is too long");
    memcpy(json, job->payload.ptr, job->payload.len);
    json[job->payload.len] = 0;
    const char *type = value_of(json, "type");
    const char *count = value_of(json, "count");
    if (!type || *type != '"' || !count || !isdigit((unsigned char)*count))
        return sluice_fatal("payload needs a string `type` and a number `count`");
    char job_type[129];
    size_t len = 0;
    for (type++; *type && *type != '"' && len < sizeof job_type - 1; type++) job_type[len++] = *type;
    job_type[len] = 0;
    unsigned long n = strtoul(count, NULL, 10);
    for (unsigned long i = 0; i < n; i++) {
        char child[64];
        int size = snprintf(child, sizeof child, "{\"n\":%lu,\"attempt\":%u}", i, job->attempt);
        sluice_enqueue_error_t err;
        if (!sluice_enqueue(job_type, child, (size_t)size, NULL, &err))
            return sluice_fatal("follow-up job %lu refused: %s", i, err.message);
    }
    char out[64];
    snprintf(out, sizeof out, "{\"enqueued\":%lu}", n);
    return sluice_ok_str(out);
}

SLUICE_TASK(run)
