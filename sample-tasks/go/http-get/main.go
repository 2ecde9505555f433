//go:build sluice_0_2

// Command http-get: payload {"url": "...", "timeout_ms": N?, "times": N?, "upload_bytes":
// N?}; fetches the URL (`times` times, default once) through the host's egress policy and
// completes with the last response's {"status": S, "body_bytes": N, "body_head": "first 64
// bytes", "requests": N}. With `upload_bytes` it POSTs that many bytes (`x`) instead of
// GETting (a body for the host's request-body cap). A request the host refuses or that
// fails ends the job `dead` at once, its message naming the wasi:http error code (a refusal
// will not change on a retry). The same task as the Rust sample sample-tasks/http-get;
// built with -tags sluice_0_2 against wit/v0.2 (contract 0.2).
package main

import (
	"bytes"
	"time"

	"sluice.invalid/task"
)

func init() {
	task.Handle(func(job task.Job) ([]byte, error) {
		var args struct {
			URL         *string `json:"url"`
			TimeoutMS   uint64  `json:"timeout_ms"`
			Times       uint64  `json:"times"`
			UploadBytes *uint64 `json:"upload_bytes"`
		}
		if err := job.JSON(&args); err != nil {
			return nil, err
		}
		if args.URL == nil {
			return nil, task.Fatal("payload needs a string `url`")
		}
		req := task.HTTPRequest{URL: *args.URL, Timeout: time.Duration(args.TimeoutMS) * time.Millisecond}
		if args.UploadBytes != nil {
			req.Method = "POST"
			req.Body = bytes.Repeat([]byte("x"), int(*args.UploadBytes))
		}
		times := max(args.Times, 1)
		var res *task.HTTPResponse
		for range times {
			var err error
			if res, err = task.HTTPSend(req); err != nil {
				return nil, task.Fatal("%s", err.Error())
			}
		}
		head := res.Body[:min(len(res.Body), 64)]
		return task.JSONOutput(map[string]any{
			"status":     res.Status,
			"body_bytes": len(res.Body),
			"body_head":  string(head),
			"requests":   times,
		})
	})
}

func main() {}
