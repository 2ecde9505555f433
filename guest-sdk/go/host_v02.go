//go:build sluice_0_2

package task

// Contract 0.2 (wit/v0.2, built with `-tags sluice_0_2`): Log and Cancelled on the
// generated `sluice:task/host@0.2.0` bindings. `cabi_realloc` is the one of
// go.bytecodealliance.org/pkg/wit/runtime, which every generated package that passes
// memory uses; it is imported here so that even a task that only logs exports it.

import (
	host "sluice.invalid/task/bindings/v0.2/imports/sluice_task_host"

	_ "go.bytecodealliance.org/pkg/wit/runtime"
)

// Log appends one line to the attempt's log (capped per attempt, never an error).
func Log(level Level, message string) { host.Log(host.Level(level), message) }

// Cancelled is true once an operator cancelled this job or the host is shutting down.
func Cancelled() bool { return host.Cancelled() }
