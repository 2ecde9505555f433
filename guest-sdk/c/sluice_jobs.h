/*
 * sluice_jobs.h — follow-up jobs from a C task (contract 0.2 and later): sluice_enqueue,
 * and in 0.3 sluice_enqueue_id, which also returns the id the job will have (to await it
 * with sluice_await_jobs, sluice_durable.h). Included by sluice_task.h when the bindings
 * have `sluice:task/jobs` (bindings/v0.2, bindings/v0.3); include sluice_task.h, not this
 * file.
 */
#ifndef SLUICE_JOBS_H
#define SLUICE_JOBS_H

#include "sluice_task.h"

#ifdef SLUICE_TASK_JOBS_ENQUEUE_ERROR_INVALID
/*
 * Follow-up jobs: buffered by the host and inserted in the statement that records this
 * run's end: the attempt's success or, in a durable type (0.3), a suspension; so they
 * exist only if it completes or suspends (docs/task-authors.md, docs/durable.md).
 *
 *   sluice_enqueue_error_t err;
 *   if (!sluice_enqueue("send-receipt", "{\"order\":42}", 12, NULL, &err))
 *       return sluice_fatal("follow-up refused: %s", err.message);
 *
 *   uint64_t id;                                  // 0.3 only (bindings/v0.3)
 *   if (!sluice_enqueue_id("resize", "{\"i\":0}", 7, NULL, &id, &err)) ...
 *
 * `options` NULL takes the defaults (medium priority, due now, the type's attempts, no
 * key); else set the `is_some` fields of a zeroed sluice_task_jobs_enqueue_options_t
 * (0.3 adds `concurrency_key`). On refusal err.kind is
 * SLUICE_TASK_JOBS_ENQUEUE_ERROR_UNKNOWN_JOB_TYPE, _INVALID or _LIMIT_EXCEEDED and
 * err.message says why (truncated to fit).
 */
typedef struct sluice_enqueue_error_t {
    uint8_t kind;
    char message[512];
} sluice_enqueue_error_t;

/* Copies the refusal into *err and frees it. */
static inline bool sluice_enqueue_refused(sluice_task_jobs_enqueue_error_t *refused, sluice_enqueue_error_t *err) {
    err->kind = refused->tag;
    /* Every case carries one string. */
    task_string_t *why = &refused->val.invalid;
    size_t len = why->len < sizeof err->message - 1 ? why->len : sizeof err->message - 1;
    memcpy(err->message, why->ptr, len);
    err->message[len] = 0;
    sluice_task_jobs_enqueue_error_free(refused);
    return false;
}

#ifdef SLUICE_TASK_DURABLE_WAIT_ERROR_NOT_DURABLE
/* Contract 0.3: buffers the job and sets *id to the id it will have (journaled in a durable
 * type: a replayed run gets the same id, and the job is created once). The reserved type
 * `sluice.event` gets 0, which names no job. */
static inline bool sluice_enqueue_id(const char *job_type, const void *payload, size_t payload_len,
                                     const sluice_task_jobs_enqueue_options_t *options, uint64_t *id,
                                     sluice_enqueue_error_t *err) {
    task_string_t type = {(uint8_t *)job_type, strlen(job_type)};
    task_list_u8_t body = {(uint8_t *)payload, payload_len};
    sluice_task_jobs_enqueue_options_t defaults;
    memset(&defaults, 0, sizeof defaults);
    sluice_task_jobs_enqueue_error_t refused;
    uint64_t reserved = 0;
    if (sluice_task_jobs_enqueue(&type, &body, options ? (sluice_task_jobs_enqueue_options_t *)options : &defaults,
                                 &reserved, &refused)) {
        if (id) *id = reserved;
        return true;
    }
    return sluice_enqueue_refused(&refused, err);
}

/* Buffers the job; its id is dropped (sluice_enqueue_id keeps it). */
static inline bool sluice_enqueue(const char *job_type, const void *payload, size_t payload_len,
                                  const sluice_task_jobs_enqueue_options_t *options,
                                  sluice_enqueue_error_t *err) {
    return sluice_enqueue_id(job_type, payload, payload_len, options, NULL, err);
}
#else
/* Contract 0.2: buffers the job (0.2 returns no id). */
static inline bool sluice_enqueue(const char *job_type, const void *payload, size_t payload_len,
                                  const sluice_task_jobs_enqueue_options_t *options,
                                  sluice_enqueue_error_t *err) {
    task_string_t type = {(uint8_t *)job_type, strlen(job_type)};
    task_list_u8_t body = {(uint8_t *)payload, payload_len};
    sluice_task_jobs_enqueue_options_t defaults;
    memset(&defaults, 0, sizeof defaults);
    sluice_task_jobs_enqueue_error_t refused;
    if (sluice_task_jobs_enqueue(&type, &body, options ? (sluice_task_jobs_enqueue_options_t *)options : &defaults,
                                 &refused))
        return true;
    return sluice_enqueue_refused(&refused, err);
}
#endif /* SLUICE_TASK_DURABLE_WAIT_ERROR_NOT_DURABLE */
#endif /* SLUICE_TASK_JOBS_ENQUEUE_ERROR_INVALID */

#endif /* SLUICE_JOBS_H */
