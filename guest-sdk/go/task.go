// Package task writes a Sluice task in Go: one function from a job to its output, compiled
// with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared and turned into a component with
// `wasm-tools component embed` + `wasm-tools component new` (see docs/guests/go.md).
//
//	func main() {} // required by the Go toolchain; never called
//
//	func init() {
//		task.Handle(func(job task.Job) ([]byte, error) {
//			var args struct{ Name string }
//			if err := job.JSON(&args); err != nil {
//				return nil, err // malformed JSON -> fatal
//			}
//			return task.JSONOutput(map[string]string{"greeted": args.Name})
//		})
//	}
//
// Returning bytes completes the job; returning task.Retry(msg) asks for another attempt
// with backoff; task.Fatal(msg) sends the job to `dead` at once; any other error is retried
// with its message. A panic traps (retryable, message on stderr in the attempt's log).
//
// Built with `-tags sluice_0_2` against wit/v0.2 (docs/guests/go.md), a task targets
// contract 0.2 and can also read the tenant's secrets: task.Secret(name).
package task

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Job is one attempt of one job (the WIT record `job`).
type Job struct {
	ID          uint64
	JobType     string
	Tenant      string
	Attempt     uint32
	MaxAttempts uint32
	Payload     []byte
}

// JSON decodes the payload into v; a malformed payload is a Fatal error.
func (j Job) JSON(v any) error {
	if err := json.Unmarshal(j.Payload, v); err != nil {
		return Fatal("payload is not valid JSON: " + err.Error())
	}
	return nil
}

// IsLastAttempt is true when a Retry from this attempt would send the job to `dead`.
func (j Job) IsLastAttempt() bool { return j.Attempt >= j.MaxAttempts }

// Error is a failure on purpose: Retry or Fatal (the WIT variant `task-error`).
type Error struct {
	Fatal   bool
	Message string
}

func (e *Error) Error() string {
	if e.Fatal {
		return "fatal: " + e.Message
	}
	return "retry: " + e.Message
}

// Retry is a transient failure: retried with backoff while attempts remain.
func Retry(format string, args ...any) error {
	return &Error{Message: fmt.Sprintf(format, args...)}
}

// Fatal is a permanent failure: the job goes to `dead` at once.
func Fatal(format string, args ...any) error {
	return &Error{Fatal: true, Message: fmt.Sprintf(format, args...)}
}

// JSONOutput serializes v as the job's output; an unserializable value is Fatal.
func JSONOutput(v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return nil, Fatal("cannot serialize output as JSON: " + err.Error())
	}
	return out, nil
}

// Handler is a task: the job in, its output or an error out.
type Handler func(Job) ([]byte, error)

var theHandler Handler

// Handle makes fn this component's `run` export. Call it once, from init.
func Handle(fn Handler) { theHandler = fn }

// call runs the handler and maps its outcome onto the WIT result.
func call(job Job) (output []byte, failure *Error) {
	if theHandler == nil {
		return nil, &Error{Fatal: true, Message: "no handler: call task.Handle from init"}
	}
	out, err := theHandler(job)
	if err == nil {
		return out, nil
	}
	var taskErr *Error
	if errors.As(err, &taskErr) {
		return nil, taskErr
	}
	var permanent permanentError
	if errors.As(err, &permanent) {
		return nil, &Error{Fatal: true, Message: err.Error()}
	}
	return nil, &Error{Message: err.Error()}
}

// permanentError is an SDK error a retry cannot fix (a *SecretError): returned from the
// handler, it is Fatal.
type permanentError interface {
	error
	permanent()
}
