// The `{{name}}` task: one attempt of one job in, the job's output out.
package main

import (
	"encoding/json"
	"fmt"

	"sluice.invalid/task"
)

func init() {
	task.Handle(func(job task.Job) ([]byte, error) {
		var args map[string]json.RawMessage
		if err := json.Unmarshal(job.Payload, &args); err != nil || args == nil {
			return nil, task.Fatal("the payload must be a JSON object") // dead at once
		}
		task.Log(task.Info, fmt.Sprintf("{{name}}: attempt %d of %d", job.Attempt, job.MaxAttempts))
		return task.JSONOutput(map[string]any{"task": "{{name}}", "received": args})
	})
}

func main() {} // required by the Go toolchain; never called
