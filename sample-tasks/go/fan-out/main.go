//go:build sluice_0_2

// Command fan-out: payload {"type": "echo", "count": N}; enqueues N follow-up jobs of
// `type`, child i with the payload {"n": i, "attempt": A}. They exist only if this attempt
// completes. A refused enqueue fails the job permanently, naming why. Completes with
// {"enqueued": N}. The same task as the Rust sample sample-tasks/fan-out (its core); built
// with -tags sluice_0_2 against wit/v0.2 (contract 0.2).
package main

import (
	"fmt"

	"sluice.invalid/task"
)

func init() {
	task.Handle(func(job task.Job) ([]byte, error) {
		var args struct {
			Type  *string `json:"type"`
			Count *uint64 `json:"count"`
		}
		if err := job.JSON(&args); err != nil {
			return nil, err
		}
		if args.Type == nil || args.Count == nil {
			return nil, task.Fatal("payload needs a string `type` and a number `count`")
		}
		for i := range *args.Count {
			child := fmt.Sprintf(`{"n":%d,"attempt":%d}`, i, job.Attempt)
			if err := task.Enqueue(*args.Type, []byte(child), nil); err != nil {
				return nil, task.Fatal("follow-up job %d refused: %s", i, err.Error())
			}
		}
		return task.JSONOutput(map[string]uint64{"enqueued": *args.Count})
	})
}

func main() {}
