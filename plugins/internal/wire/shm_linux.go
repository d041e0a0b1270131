package wire

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations on a word of a shared mapping: not FUTEX_PRIVATE_FLAG,
// since the waiter and the waker are different processes.
const (
	futexWaitOp = 0 // FUTEX_WAIT
	futexWakeOp = 1 // FUTEX_WAKE
)

// futexWait sleeps while *w == val, at most d (or until woken, or a signal).
func futexWait(w *atomic.Uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWaitOp, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes the sleepers on w.
func futexWake(w *atomic.Uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWakeOp, 1<<30, 0, 0, 0)
}

// osYield gives the core to another runnable thread, if any.
func osYield() { unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// createRegion makes an anonymous shared-memory file (memfd, no name in
// any file system, so nothing is left behind however the processes end)
// of size bytes, mapped.
func createRegion(size int) (*os.File, []byte, error) {
	fd, err := unix.MemfdCreate("gray-step", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "gray-step")
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("sizing the shared step region: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("mapping the shared step region: %w", err)
	}
	return f, mem, nil
}

// mapFile maps all of f, shared.
func mapFile(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shared step region: %w", err)
	}
	if st.Size() < shmHeader || st.Size() > 1<<34 {
		return nil, fmt.Errorf("shared step region of %d bytes (corrupt?)", st.Size())
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the shared step region: %w", err)
	}
	return mem, nil
}

func unmap(mem []byte) error { return unix.Munmap(mem) }

// ShmSupported reports whether this platform has the shared-memory step
// transport.
const ShmSupported = true
