//go:build sluice_0_2

// Command secret-echo: payload {"secret": "NAME"}; reads the tenant's secret NAME, logs a
// line and prints one holding the value, and completes with {"found": true, "value":
// "<the value>"}: the host masks the value as `[secret NAME]` in the log, stdout and the
// output it keeps. A name granted but not set completes with {"found": false, "code":
// "not-found"}; a name the job type is not granted ends the job `dead` (a SecretError is
// fatal), naming `not-granted`. Built with -tags sluice_0_2 against wit/v0.2 (contract 0.2).
package main

import (
	"errors"
	"fmt"

	"sluice.invalid/task"
)

func init() {
	task.Handle(func(job task.Job) ([]byte, error) {
		var args struct {
			Secret *string `json:"secret"`
		}
		if err := job.JSON(&args); err != nil {
			return nil, err
		}
		if args.Secret == nil {
			return nil, task.Fatal("payload needs a string `secret`")
		}
		value, err := task.Secret(*args.Secret)
		var refused *task.SecretError
		if errors.As(err, &refused) && refused.Code == task.SecretNotFound {
			return task.JSONOutput(map[string]any{"found": false, "code": refused.Code})
		}
		if err != nil {
			return nil, err // not-granted: fatal
		}
		task.Log(task.Info, fmt.Sprintf("read %s: %s", *args.Secret, value))
		fmt.Printf("stdout also sees %s\n", value)
		return task.JSONOutput(map[string]any{"found": true, "value": value})
	})
}

func main() {}
