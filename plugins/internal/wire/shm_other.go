//go:build !linux

package wire

import (
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

var errNoShm = errors.New("the shared-memory step transport needs Linux")

func futexWait(w *atomic.Uint32, val uint32, d time.Duration) { time.Sleep(d / 100) }
func futexWake(w *atomic.Uint32)                              {}
func osYield()                                                { runtime.Gosched() }
func createRegion(size int) (*os.File, []byte, error)         { return nil, nil, errNoShm }
func mapFile(f *os.File) ([]byte, error)                      { return nil, errNoShm }
func unmap(mem []byte) error                                  { return nil }

// ShmSupported reports whether this platform has the shared-memory step
// transport.
const ShmSupported = false
