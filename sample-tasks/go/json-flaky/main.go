// Command json-flaky: payload {"succeed_on": N}. Attempts before N ask for a retry; attempt
// N (or later) completes with {"succeeded_on": N}. A payload that is not JSON, or has no
// positive integer succeed_on, is a fatal error.
package main

import (
	"fmt"

	"sluice.invalid/task"
)

func init() {
	task.Handle(func(job task.Job) ([]byte, error) {
		var args struct {
			SucceedOn *int64 `json:"succeed_on"`
		}
		if err := job.JSON(&args); err != nil {
			return nil, err
		}
		if args.SucceedOn == nil || *args.SucceedOn < 1 {
			return nil, task.Fatal("succeed_on must be a positive integer")
		}
		if int64(job.Attempt) < *args.SucceedOn {
			return nil, task.Retry("attempt %d of %d failed on purpose", job.Attempt, *args.SucceedOn)
		}
		task.Log(task.Info, fmt.Sprintf("succeeded on attempt %d", job.Attempt))
		return task.JSONOutput(map[string]uint32{"succeeded_on": job.Attempt})
	})
}

func main() {}
