//go:build sluice_0_2

package task

// Follow-up jobs (contract 0.2, `-tags sluice_0_2`): Enqueue on the generated
// `sluice:task/jobs@0.2.0` bindings, its options and its typed error EnqueueError.

import (
	"time"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	jobs "sluice.invalid/task/bindings/v0.2/imports/sluice_task_jobs"
)

// EnqueueOptions are a follow-up job's settings; a zero field takes the host's default.
type EnqueueOptions struct {
	// Priority: higher runs first (low 0, medium 10, high 20, critical 30); nil is medium.
	Priority *int16
	// Delay: due this long after the parent's completion is recorded.
	Delay time.Duration
	// RunAt: due at this instant. At most one of Delay and RunAt.
	RunAt time.Time
	// MaxAttempts: attempts before the job is dead; 0 is the job type's.
	MaxAttempts uint32
	// IdempotencyKey: unique per tenant while the job exists ("" for none).
	IdempotencyKey string
}

// EnqueueErrorKind is why a follow-up job was refused: the WIT variant `enqueue-error`.
type EnqueueErrorKind string

// The cases of `enqueue-error`, named as in the WIT file.
const (
	// EnqueueUnknownJobType: the tenant has no job type of this name.
	EnqueueUnknownJobType EnqueueErrorKind = "unknown-job-type"
	// EnqueueInvalid: an option or the payload is invalid; the message names it.
	EnqueueInvalid EnqueueErrorKind = "invalid"
	// EnqueueLimitExceeded: this attempt reached its cap on follow-up jobs or their bytes.
	EnqueueLimitExceeded EnqueueErrorKind = "limit-exceeded"
)

// EnqueueError is a follow-up job the host refused; nothing was buffered. None of them
// changes on a retry: return task.Fatal.
type EnqueueError struct {
	Kind    EnqueueErrorKind
	Message string // the host's words, naming the job type, option or cap
}

func (e *EnqueueError) Error() string {
	return string(e.Kind) + ": " + e.Message
}

// Enqueue buffers one follow-up job of the same tenant: it is inserted with this attempt's
// success, and only then (docs/task-authors.md has the rules and caps). opts may be nil.
func Enqueue(jobType string, payload []byte, opts *EnqueueOptions) error {
	var wit jobs.EnqueueOptions
	if opts != nil {
		if opts.Priority != nil {
			wit.Priority = witTypes.Some(*opts.Priority)
		}
		if opts.Delay > 0 {
			wit.DelayMs = witTypes.Some(uint64(opts.Delay.Milliseconds()))
		}
		if !opts.RunAt.IsZero() {
			wit.RunAtMs = witTypes.Some(opts.RunAt.UnixMilli())
		}
		if opts.MaxAttempts > 0 {
			wit.MaxAttempts = witTypes.Some(opts.MaxAttempts)
		}
		if opts.IdempotencyKey != "" {
			wit.IdempotencyKey = witTypes.Some(opts.IdempotencyKey)
		}
	}
	done := jobs.Enqueue(jobType, payload, wit)
	if done.IsOk() {
		return nil
	}
	refused := done.Err()
	switch refused.Tag() {
	case jobs.EnqueueError_UnknownJobType:
		return &EnqueueError{Kind: EnqueueUnknownJobType, Message: refused.UnknownJobType()}
	case jobs.EnqueueError_Invalid:
		return &EnqueueError{Kind: EnqueueInvalid, Message: refused.Invalid()}
	default:
		return &EnqueueError{Kind: EnqueueLimitExceeded, Message: refused.LimitExceeded()}
	}
}
