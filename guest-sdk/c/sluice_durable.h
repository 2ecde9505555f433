/*
 * sluice_durable.h — contract 0.3 from a C task: waiting without holding a slot
 * (`sluice:task/durable@0.3.0`: sluice_sleep_ms, sluice_await_signal, sluice_await_jobs) and
 * "run me again later" (`sluice:task/flow@0.3.0`: sluice_snooze_ms, and
 * sluice_snooze_when_busy for a 429 or 503 response); docs/durable.md,
 * docs/flow-control.md. Included by sluice_task.h when compiled against bindings/v0.3;
 * include sluice_task.h, not this file.
 *
 *   sluice_sleep_ms(3ULL * 24 * 3600 * 1000);              // three days, no slot held
 *   sluice_signal_t approval;
 *   sluice_wait_error_t err;
 *   if (!sluice_await_signal("approve", 86400000, &approval, &err))
 *       return sluice_fatal("%s", err.message);           // not-durable, or invalid
 *   ... approval.received ? approval.payload (JSON text) : timed out ...
 *   sluice_signal_free(&approval);
 *
 *   uint64_t ids[3];
 *   sluice_enqueue_error_t refused;
 *   for (int i = 0; i < 3; i++)
 *       if (!sluice_enqueue_id("resize", "{}", 2, NULL, &ids[i], &refused)) ...
 *   sluice_child_outcome_t *outcomes;
 *   if (!sluice_await_jobs(ids, 3, &outcomes, &err)) return sluice_fatal("%s", err.message);
 *   ... outcomes[i].state == SLUICE_CHILD_COMPLETED, outcomes[i].output ...
 *   sluice_child_outcomes_free(outcomes, 3);
 *
 * In a durable job type (`sluice types set T --durable`) a wait that cannot be answered now
 * suspends the run: the job goes to `waiting`, holds no slot, and the run after the wake-up
 * replays every host call made before the wait from the journal (same answers, HTTP not
 * sent again); then the call returns. To the task each is a plain blocking call. In a type
 * that is not durable sluice_sleep_ms sleeps in place (within the attempt's timeout) and the
 * awaits return false with err.kind SLUICE_WAIT_NOT_DURABLE.
 */
#ifndef SLUICE_DURABLE_H
#define SLUICE_DURABLE_H

#include "sluice_task.h"

#ifdef SLUICE_TASK_DURABLE_WAIT_ERROR_NOT_DURABLE

/* Why a wait was refused; nothing was recorded. `kind`: SLUICE_WAIT_NOT_DURABLE (the job
 * type is not durable) or SLUICE_WAIT_INVALID (a signal name empty or too long, an id not
 * enqueued by this job, an id listed twice); `message` says it in words ("not-durable: …",
 * "invalid wait: …"). Neither gets better by retrying: return sluice_fatal. */
#define SLUICE_WAIT_NOT_DURABLE SLUICE_TASK_DURABLE_WAIT_ERROR_NOT_DURABLE
#define SLUICE_WAIT_INVALID SLUICE_TASK_DURABLE_WAIT_ERROR_INVALID
typedef struct sluice_wait_error_t {
    uint8_t kind;
    char message[512];
} sluice_wait_error_t;

/* Copies the refusal into *err and frees it. */
static inline bool sluice_wait_refused(sluice_task_durable_wait_error_t *refused, sluice_wait_error_t *err) {
    err->kind = refused->tag;
    if (refused->tag == SLUICE_TASK_DURABLE_WAIT_ERROR_NOT_DURABLE) {
        snprintf(err->message, sizeof err->message,
                 "not-durable: this job type cannot wait without holding a slot "
                 "(make it durable: `sluice types set TYPE --durable`)");
    } else {
        task_string_t *why = &refused->val.invalid;
        snprintf(err->message, sizeof err->message, "invalid wait: %.*s", (int)why->len, (const char *)why->ptr);
    }
    sluice_task_durable_wait_error_free(refused);
    return false;
}

/* Returns after `ms` milliseconds. Durable type: the wake-up instant is fixed (and
 * journaled) by the first call; a short sleep (at most 1 s) that ends before the attempt's
 * deadline sleeps in place, a longer one suspends the run until that instant; a replayed
 * sleep whose instant has passed returns at once. Not durable: sleeps in place; one that
 * would outlast the attempt's remaining time fails the attempt at once (retryable) and
 * never returns. 0 returns at once. */
static inline void sluice_sleep_ms(uint64_t ms) { sluice_task_durable_sleep(ms); }

/* A NUL-terminated copy of `len` bytes. */
static inline char *sluice_durable_copy(const uint8_t *bytes, size_t len) {
    char *text = (char *)malloc(len + 1);
    if (!text) abort();
    if (len) memcpy(text, bytes, len);
    text[len] = 0;
    return text;
}

/* No timeout: sluice_await_signal waits until a signal comes or the job is cancelled. */
#define SLUICE_NO_TIMEOUT UINT64_MAX

/* A signal's payload: `received` false once the timeout passed; else `payload` is the JSON
 * text (NUL-terminated, `len` bytes without the NUL; `null` for a signal sent without one). */
typedef struct sluice_signal_t {
    bool received;
    char *payload;
    size_t len;
} sluice_signal_t;

/* Frees what sluice_await_signal filled in (safe on a zeroed signal). */
static inline void sluice_signal_free(sluice_signal_t *signal) {
    free(signal->payload);
    memset(signal, 0, sizeof *signal);
}

/* Waits for the signal `name` sent to this job (`sluice jobs signal ID NAME`,
 * `sluice.signal(id, name, payload)` in SQL, `POST /v1/jobs/{id}/signals/{name}`) and fills
 * *signal; `timeout_ms` (fixed and journaled by the first call, like a sleep) gives up and
 * returns true with signal->received false; SLUICE_NO_TIMEOUT waits until one comes.
 * Signals are kept until awaited: each call takes the oldest of that name not yet taken, so
 * one sent before the call is returned at once. False with *err filled in (and *signal
 * zeroed) when the wait is refused. */
static inline bool sluice_await_signal(const char *name, uint64_t timeout_ms, sluice_signal_t *signal,
                                       sluice_wait_error_t *err) {
    memset(signal, 0, sizeof *signal);
    task_string_t wit_name = {(uint8_t *)name, strlen(name)};
    task_option_list_u8_t payload;
    sluice_task_durable_wait_error_t refused;
    if (!sluice_task_durable_await_signal(&wit_name, timeout_ms == SLUICE_NO_TIMEOUT ? NULL : &timeout_ms,
                                          &payload, &refused))
        return sluice_wait_refused(&refused, err);
    if (!payload.is_some) return true;
    signal->received = true;
    signal->len = payload.val.len;
    signal->payload = sluice_durable_copy(payload.val.ptr, payload.val.len);
    task_list_u8_free(&payload.val);
    return true;
}

/* How an awaited job ended. */
#define SLUICE_CHILD_COMPLETED SLUICE_TASK_DURABLE_CHILD_STATE_COMPLETED
#define SLUICE_CHILD_DEAD SLUICE_TASK_DURABLE_CHILD_STATE_DEAD
#define SLUICE_CHILD_CANCELLED SLUICE_TASK_DURABLE_CHILD_STATE_CANCELLED

/* "completed", "dead" or "cancelled". */
static inline const char *sluice_child_state_name(uint8_t state) {
    return state == SLUICE_CHILD_COMPLETED ? "completed" : state == SLUICE_CHILD_DEAD ? "dead" : "cancelled";
}

/* The final state of one awaited follow-up job. `output`: its output when completed
 * (NUL-terminated, `output_len` bytes without the NUL; possibly empty), NULL otherwise.
 * `error`: its last error when dead (and cancelled, if it had one), NULL when completed. */
typedef struct sluice_child_outcome_t {
    uint64_t id; /* what sluice_enqueue_id returned */
    uint8_t state; /* SLUICE_CHILD_COMPLETED, _DEAD or _CANCELLED */
    char *output;
    size_t output_len;
    char *error;
} sluice_child_outcome_t;

/* Frees what sluice_await_jobs returned (`count` outcomes; NULL is fine). */
static inline void sluice_child_outcomes_free(sluice_child_outcome_t *outcomes, size_t count) {
    if (!outcomes) return;
    for (size_t i = 0; i < count; i++) {
        free(outcomes[i].output);
        free(outcomes[i].error);
    }
    free(outcomes);
}

/* Waits until every job in `ids` (`count` of them) has finished (completed, dead or
 * cancelled) and sets *outcomes to a malloc'ed array of their outcomes in the order of `ids`
 * (free it with sluice_child_outcomes_free(*outcomes, count)). Each id must have been
 * returned to this job by sluice_enqueue_id (in this run or an earlier one) and be listed
 * once; an empty list returns at once. Children enqueued in this run are inserted by the
 * suspension, so enqueue and await in the same run (fan-in). False with *err filled in
 * (and *outcomes NULL) when the wait is refused. */
static inline bool sluice_await_jobs(const uint64_t *ids, size_t count, sluice_child_outcome_t **outcomes,
                                     sluice_wait_error_t *err) {
    *outcomes = NULL;
    task_list_u64_t list = {(uint64_t *)ids, count};
    sluice_task_durable_list_child_outcome_t got;
    sluice_task_durable_wait_error_t refused;
    if (!sluice_task_durable_await_jobs(&list, &got, &refused)) return sluice_wait_refused(&refused, err);
    sluice_child_outcome_t *out = (sluice_child_outcome_t *)calloc(got.len ? got.len : 1, sizeof *out);
    if (!out) abort();
    for (size_t i = 0; i < got.len; i++) {
        sluice_task_durable_child_outcome_t *o = &got.ptr[i];
        out[i].id = o->id;
        out[i].state = o->state;
        if (o->output.is_some) {
            out[i].output = sluice_durable_copy(o->output.val.ptr, o->output.val.len);
            out[i].output_len = o->output.val.len;
        }
        if (o->error.is_some) out[i].error = sluice_durable_copy(o->error.val.ptr, o->error.val.len);
    }
    sluice_task_durable_list_child_outcome_free(&got);
    *outcomes = out;
    return true;
}

/* End this run and run the job again in `ms` milliseconds without spending an attempt ("the
 * API said 429, come back in 30 s"). Not durable: never returns; the next run starts `run`
 * over, and follow-up jobs enqueued in this run are dropped. Durable: the next run replays
 * the journal up to this call, which then returns; call again what was refused. Bounded by
 * the type's `--max-snoozes` (one more fails the attempt, retryable). */
static inline void sluice_snooze_ms(uint64_t ms) { sluice_task_flow_snooze(ms); }

/* The longest snooze sluice_snooze_when_busy takes: one hour (a server asking for more gets
 * this, and is asked again then). */
#define SLUICE_MAX_RETRY_AFTER_MS 3600000ULL

/* When `res` says the server is busy — 429 Too Many Requests or 503 Service Unavailable —
 * snoozes for its Retry-After (sluice_http_retry_after_ms: seconds or an HTTP-date, at most
 * SLUICE_MAX_RETRY_AFTER_MS) or `default_ms` without a usable one, and returns true
 * (durable: after the snooze, so send the request again; not durable, it never returns);
 * any other status returns false at once. Free `res` before looping:
 *
 *   for (;;) {
 *       if (!sluice_http_get(url, &res, &err)) return sluice_retry("%s", err.message);
 *       if (!sluice_snooze_when_busy(&res, 30000)) break;
 *       sluice_http_response_free(&res);
 *   }
 */
#ifdef WASI_HTTP_TYPES_METHOD_GET
static inline bool sluice_snooze_when_busy(const sluice_http_response_t *res, uint64_t default_ms) {
    if (res->status != 429 && res->status != 503) return false;
    uint64_t ms;
    if (!sluice_http_retry_after_ms(res, &ms)) ms = default_ms;
    sluice_snooze_ms(ms < SLUICE_MAX_RETRY_AFTER_MS ? ms : SLUICE_MAX_RETRY_AFTER_MS);
    return true;
}
#endif /* WASI_HTTP_TYPES_METHOD_GET */

#endif /* SLUICE_TASK_DURABLE_WAIT_ERROR_NOT_DURABLE */

#endif /* SLUICE_DURABLE_H */
