package task

// Hand-written canonical-ABI glue for the `sluice:task` world (wit/task.wit), because
// wit-bindgen's Go generator needs a module this machine's Go proxy does not serve.
// Keep it in step with the WIT file: `wasm-tools component new` refuses a module whose
// imports and exports below disagree with the world's types; the return area's layout is
// not visible to it and is proven by the end-to-end tests (tests/e2e/languages.rs).

import "unsafe"

//go:wasmimport sluice:task/host@0.1.0 log
func hostLog(level uint32, ptr unsafe.Pointer, length uint32)

//go:wasmimport sluice:task/host@0.1.0 cancelled
func hostCancelled() uint32

// Level is the WIT enum `level` (its case index).
type Level uint32

// Log levels, in the WIT enum's order.
const (
	Trace Level = iota
	Debug
	Info
	Warn
	ErrorLevel
)

// Log appends one line to the attempt's log (capped per attempt, never an error).
func Log(level Level, message string) {
	hostLog(uint32(level), unsafe.Pointer(unsafe.StringData(message)), uint32(len(message)))
}

// Cancelled is true once an operator cancelled this job or the host is shutting down.
func Cancelled() bool { return hostCancelled() != 0 }

// Memory the host writes arguments into (through cabi_realloc) and the output we return
// must stay reachable until the call ends; an instance serves one attempt, so holding it
// for the instance's life is simplest.
var pinned [][]byte

//go:wasmexport cabi_realloc
func cabiRealloc(old unsafe.Pointer, oldSize, align, newSize uint32) unsafe.Pointer {
	if newSize == 0 {
		return unsafe.Pointer(uintptr(align))
	}
	buf := make([]byte, newSize+align)
	pinned = append(pinned, buf)
	addr := (uintptr(unsafe.Pointer(&buf[0])) + uintptr(align) - 1) &^ (uintptr(align) - 1)
	ptr := unsafe.Pointer(addr)
	if old != nil && oldSize > 0 {
		copy(unsafe.Slice((*byte)(ptr), newSize), unsafe.Slice((*byte)(old), min(oldSize, newSize)))
	}
	return ptr
}

// retArea is `result<list<u8>, task-error>` laid out by the canonical ABI (size 16,
// align 4): [0] result case (0 ok, 1 err); ok: [1] list pointer, [2] length; err:
// [1] task-error case (0 retry, 1 fatal), [2] string pointer, [3] length.
var retArea [4]uint32

func bytesAt(ptr unsafe.Pointer, length uint32) []byte {
	if length == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(ptr), length)
}

// run is the world's export `run: func(job: job) -> result<list<u8>, task-error>`,
// with the record flattened into its fields.
//
//go:wasmexport run
func run(id uint64, typePtr unsafe.Pointer, typeLen uint32, tenantPtr unsafe.Pointer,
	tenantLen uint32, attempt, maxAttempts uint32, payloadPtr unsafe.Pointer,
	payloadLen uint32) unsafe.Pointer {
	job := Job{
		ID:          id,
		JobType:     string(bytesAt(typePtr, typeLen)),
		Tenant:      string(bytesAt(tenantPtr, tenantLen)),
		Attempt:     attempt,
		MaxAttempts: maxAttempts,
		Payload:     bytesAt(payloadPtr, payloadLen),
	}
	output, failure := call(job)
	if failure == nil {
		output = append([]byte(nil), output...) // our own copy, pinned below
		pinned = append(pinned, output)
		retArea = [4]uint32{0, uint32(uintptr(unsafe.Pointer(unsafe.SliceData(output)))), uint32(len(output)), 0}
	} else {
		message := []byte(failure.Message)
		pinned = append(pinned, message)
		kind := uint32(0)
		if failure.Fatal {
			kind = 1
		}
		retArea = [4]uint32{1, kind, uint32(uintptr(unsafe.Pointer(unsafe.SliceData(message)))), uint32(len(message))}
	}
	return unsafe.Pointer(&retArea[0])
}
