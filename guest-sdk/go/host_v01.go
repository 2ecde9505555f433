//go:build !sluice_0_2

package task

// Contract 0.1 (wit/task.wit, the default build): the hand-written `sluice:task/host`
// imports behind Log and Cancelled, and the `cabi_realloc` the host writes `run`'s
// arguments through.

import "unsafe"

//go:wasmimport sluice:task/host@0.1.0 log
func hostLog(level uint32, ptr unsafe.Pointer, length uint32)

//go:wasmimport sluice:task/host@0.1.0 cancelled
func hostCancelled() uint32

// Log appends one line to the attempt's log (capped per attempt, never an error).
func Log(level Level, message string) {
	hostLog(uint32(level), unsafe.Pointer(unsafe.StringData(message)), uint32(len(message)))
}

// Cancelled is true once an operator cancelled this job or the host is shutting down.
func Cancelled() bool { return hostCancelled() != 0 }

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
