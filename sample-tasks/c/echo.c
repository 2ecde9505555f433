/* `echo`: completes with its payload unchanged. */
#include "sluice_task.h"

static sluice_result_t run(const sluice_job_t *job) {
    return sluice_ok(job->payload.ptr, job->payload.len);
}

SLUICE_TASK(run)
