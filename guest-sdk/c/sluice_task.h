/*
 * sluice_task.h — write a Sluice task in C: one function from a job to its result. The
 * entry header: include this one only; it includes the helpers the bindings you compile
 * against support.
 *
 *   #include "sluice_task.h"
 *
 *   static sluice_result_t run(const sluice_job_t *job) {
 *       if (job->payload.len == 0) return sluice_fatal("empty payload");
 *       sluice_log_info("attempt %u of %u", job->attempt, job->max_attempts);
 *       return sluice_ok(job->payload.ptr, job->payload.len);
 *   }
 *
 *   SLUICE_TASK(run)
 *
 * Header-only, on top of the bindings wit-bindgen generates from the contract: wit/task.wit
 * (0.1: bindings/task.h and bindings/task.c), wit/v0.2 (0.2: bindings/v0.2/) or wit/v0.3
 * (0.3: bindings/v0.3/); for 0.2 or 0.3 put that folder on the include path instead and
 * compile its task.c with your task. This file owns the core (the job, results, logging,
 * `SLUICE_TASK`); built against 0.2 or 0.3 it also includes
 *   sluice_http.h     a blocking HTTP client (sluice_http_*),
 *   sluice_jobs.h     follow-up jobs (sluice_enqueue; in 0.3 sluice_enqueue_id returns the id),
 *   sluice_secrets.h  secrets (sluice_secret_get),
 * and built against 0.3
 *   sluice_durable.h  durable waits and snooze (sluice_sleep_ms, sluice_await_signal,
 *                     sluice_await_jobs, sluice_snooze_ms, sluice_snooze_when_busy).
 * `SLUICE_TASK(fn)` defines the component's `run` export: it calls `fn`, frees the job, and
 * hands the result to the host. `sluice_ok*` complete the job with a copy of the bytes;
 * `sluice_retry` asks for another attempt with backoff; `sluice_fatal` sends the job to
 * `dead` at once. A trap (abort, out-of-bounds access) fails the attempt retryably.
 *
 * Build: clang/zig cc --target=wasm32-wasi -mexec-model=reactor, then `wasm-tools component
 * embed wit --world task` (or `embed wit/v0.2 --world task`, `embed wit/v0.3 --world task`)
 * and `wasm-tools component new --adapt
 * wasi_snapshot_preview1=wasi_snapshot_preview1.reactor.wasm` (docs/guests/c.md).
 */
#ifndef SLUICE_TASK_H
#define SLUICE_TASK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "task.h"

/* One attempt of one job: id, job_type, tenant (task_string_t: ptr + len, not
 * NUL-terminated), attempt (from 1), max_attempts, payload (ptr + len). */
typedef task_job_t sluice_job_t;

/* What a task returns: build it with sluice_ok*, sluice_retry or sluice_fatal. */
typedef struct sluice_result_t {
    bool is_err;
    task_list_u8_t ok;
    task_task_error_t err;
} sluice_result_t;

/* Complete the job with a copy of `len` bytes. */
static inline sluice_result_t sluice_ok(const void *bytes, size_t len) {
    sluice_result_t r = {0};
    r.ok.len = len;
    r.ok.ptr = len ? (uint8_t *)malloc(len) : NULL;
    if (len && !r.ok.ptr) abort();
    if (len) memcpy(r.ok.ptr, bytes, len);
    return r;
}

/* Complete the job with a NUL-terminated string (without the NUL). */
static inline sluice_result_t sluice_ok_str(const char *text) {
    return sluice_ok(text, strlen(text));
}

/* printf into a fresh malloc'ed buffer; its length in *len. */
static inline char *sluice_vformat(size_t *len, const char *fmt, va_list args) {
    va_list copy;
    va_copy(copy, args);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0) n = 0;
    char *buf = (char *)malloc((size_t)n + 1);
    if (!buf) abort();
    vsnprintf(buf, (size_t)n + 1, fmt, args);
    *len = (size_t)n;
    return buf;
}

static inline sluice_result_t sluice_error(uint8_t tag, const char *fmt, va_list args) {
    sluice_result_t r = {0};
    size_t len;
    char *text = sluice_vformat(&len, fmt, args);
    r.is_err = true;
    r.err.tag = tag;
    r.err.val.retry.ptr = (uint8_t *)text; /* retry and fatal share the layout */
    r.err.val.retry.len = len;
    return r;
}

/* Transient failure (printf-style message): retried with backoff while attempts remain. */
__attribute__((format(printf, 1, 2)))
static inline sluice_result_t sluice_retry(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    sluice_result_t r = sluice_error(TASK_TASK_ERROR_RETRY, fmt, args);
    va_end(args);
    return r;
}

/* Permanent failure (printf-style message): the job goes to `dead` at once. */
__attribute__((format(printf, 1, 2)))
static inline sluice_result_t sluice_fatal(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    sluice_result_t r = sluice_error(TASK_TASK_ERROR_FATAL, fmt, args);
    va_end(args);
    return r;
}

/* One line in the attempt's log (printf-style), capped per attempt by the host. */
__attribute__((format(printf, 2, 3)))
static inline void sluice_log(sluice_task_host_level_t level, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    size_t len;
    char *text = sluice_vformat(&len, fmt, args);
    va_end(args);
    task_string_t message = {(uint8_t *)text, len};
    sluice_task_host_log(level, &message);
    free(text);
}

#define sluice_log_debug(...) sluice_log(SLUICE_TASK_HOST_LEVEL_DEBUG, __VA_ARGS__)
#define sluice_log_info(...) sluice_log(SLUICE_TASK_HOST_LEVEL_INFO, __VA_ARGS__)
#define sluice_log_warn(...) sluice_log(SLUICE_TASK_HOST_LEVEL_WARN, __VA_ARGS__)
#define sluice_log_error(...) sluice_log(SLUICE_TASK_HOST_LEVEL_ERROR, __VA_ARGS__)

/* True once an operator cancelled this job or the host is shutting down. */
static inline bool sluice_cancelled(void) { return sluice_task_host_cancelled(); }

/* Defines the component's `run` export from `sluice_result_t fn(const sluice_job_t *)`.
 * Also defines the symbol bindings/task.c references to pull in wit-bindgen's
 * component-type object: builds embed that type with `wasm-tools component embed`. */
#define SLUICE_TASK(fn)                                                                  \
    void __component_type_object_force_link_task(void) {}                               \
    bool exports_task_run(task_job_t *job, task_list_u8_t *ret, task_task_error_t *err) { \
        sluice_result_t result = fn(job);                                                \
        task_job_free(job);                                                              \
        if (result.is_err) {                                                             \
            *err = result.err;                                                           \
            return false;                                                                \
        }                                                                                \
        *ret = result.ok;                                                                \
        return true;                                                                     \
    }

/* The helpers of what the bindings import (each file is needed only when its
 * capability is in the bindings, so a 0.1 task needs this file alone). */
#ifdef WASI_HTTP_TYPES_METHOD_GET
#include "sluice_http.h"
#endif
#ifdef SLUICE_TASK_JOBS_ENQUEUE_ERROR_INVALID
#include "sluice_jobs.h"
#endif
#ifdef SLUICE_TASK_SECRETS_SECRET_ERROR_NOT_GRANTED
#include "sluice_secrets.h"
#endif
#ifdef SLUICE_TASK_DURABLE_WAIT_ERROR_NOT_DURABLE
#include "sluice_durable.h"
#endif

#endif /* SLUICE_TASK_H */
