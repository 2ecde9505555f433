/* The `{{name}}` task: one attempt of one job in, the job's output out. */
#include "sluice_task.h"

static sluice_result_t run(const sluice_job_t *job) {
    const uint8_t *p = job->payload.ptr;
    size_t n = job->payload.len;
    while (n > 0 && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++, n--;
    /* Parse with the JSON library of your choice; this template only checks the shape. */
    if (n == 0 || *p != '{') {
        return sluice_fatal("the payload must be a JSON object"); /* dead at once */
    }
    sluice_log_info("{{name}}: attempt %u of %u", job->attempt, job->max_attempts);
    const char *head = "{\"task\":\"{{name}}\",\"received\":";
    size_t head_len = strlen(head);
    char *out = malloc(head_len + job->payload.len + 1);
    if (!out) return sluice_retry("out of memory");
    memcpy(out, head, head_len);
    memcpy(out + head_len, job->payload.ptr, job->payload.len);
    out[head_len + job->payload.len] = '}';
    sluice_result_t result = sluice_ok(out, head_len + job->payload.len + 1);
    free(out);
    return result;
}

SLUICE_TASK(run)
