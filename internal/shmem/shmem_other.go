//go:build !linux

package shmem

import (
	"errors"
	"os"
	"sync/atomic"
	"time"
)

// Supported reports whether this platform has shared regions and futexes.
const Supported = false

var errUnsupported = errors.New("shared-memory transports need Linux")

// Wait sleeps a little: there is no futex here.
func Wait(w *atomic.Uint32, val uint32, d time.Duration) { time.Sleep(d / 100) }

// Wake does nothing: Wait only sleeps.
func Wake(w *atomic.Uint32) {}

// CreateRegion is not supported here.
func CreateRegion(name string, size int) (*os.File, []byte, error) {
	return nil, nil, errUnsupported
}
