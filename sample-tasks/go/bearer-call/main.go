//go:build sluice_0_2

// Command bearer-call: payload {"secret": "NAME", "url": "...", "fail": false}; reads the
// tenant's secret NAME and sends `POST url` with `Authorization: Bearer <value>` and the
// JSON body {"amount":42,"memo":"café ✓"}, the way a task calls a third-party API with a
// stored key. It logs a line holding the value and prints another (the host masks both as
// `[secret NAME]`), and completes with {"status": S}. A 4xx answer is fatal (the same
// request would be refused again), a 5xx one a retry; with "fail": true it returns a
// retryable error whose message holds the value (masked in last_error too). A secret not
// granted or not set is fatal, naming why. The C sample sample-tasks/c/bearer-call.c in
// Go; built with -tags sluice_0_2 against wit/v0.2 (contract 0.2).
package main

import (
	"fmt"

	"sluice.invalid/task"
)

const body = `{"amount":42,"memo":"café ✓"}`

func init() {
	task.Handle(func(job task.Job) ([]byte, error) {
		var args struct {
			Secret *string `json:"secret"`
			URL    *string `json:"url"`
			Fail   bool    `json:"fail"`
		}
		if err := job.JSON(&args); err != nil {
			return nil, err
		}
		if args.Secret == nil || args.URL == nil {
			return nil, task.Fatal("payload needs strings `secret` and `url`")
		}
		token, err := task.Secret(*args.Secret)
		if err != nil {
			return nil, err // a *task.SecretError: fatal
		}
		task.Log(task.Info, fmt.Sprintf("calling %s with token %s", *args.URL, token))
		fmt.Printf("stdout also sees %s\n", token)
		res, err := task.HTTPSend(task.HTTPRequest{
			Method: "POST",
			URL:    *args.URL,
			Headers: []task.Header{
				{Name: "authorization", Value: "Bearer " + token},
				{Name: "content-type", Value: "application/json"},
			},
			Body: []byte(body),
		})
		switch {
		case err != nil:
			return nil, task.Retry("%s", err.Error())
		case args.Fail:
			return nil, task.Retry("%s answered %d to token %s", *args.URL, res.Status, token)
		case res.Status >= 400 && res.Status < 500:
			return nil, task.Fatal("%s answered %d: the request is refused", *args.URL, res.Status)
		case res.Status >= 500:
			return nil, task.Retry("%s answered %d: try again later", *args.URL, res.Status)
		}
		return task.JSONOutput(map[string]int{"status": res.Status})
	})
}

func main() {}
