package shmem

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Supported reports whether this platform has shared regions and futexes.
const Supported = true

// Futex operations on a word of a shared mapping: not FUTEX_PRIVATE_FLAG,
// since the waiter and the waker are different processes.
const (
	futexWaitOp = 0 // FUTEX_WAIT
	futexWakeOp = 1 // FUTEX_WAKE
)

// Wait sleeps while *w == val, at most d (or until woken, or a signal).
func Wait(w *atomic.Uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWaitOp, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// Wake wakes the sleepers on w.
func Wake(w *atomic.Uint32) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWakeOp, 1<<30, 0, 0, 0)
}

// CreateRegion makes an anonymous shared-memory file (a memfd: nothing is
// left behind in any file system however the processes end) of size
// bytes, named name for /proc, and maps it.
func CreateRegion(name string, size int) (*os.File, []byte, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("sizing the shared-memory region %s: %w", name, err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("mapping the shared-memory region %s: %w", name, err)
	}
	return f, mem, nil
}
