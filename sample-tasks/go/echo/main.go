// Command echo: completes with its payload unchanged.
package main

import "sluice.invalid/task"

func init() {
	task.Handle(func(job task.Job) ([]byte, error) { return job.Payload, nil })
}

func main() {}
