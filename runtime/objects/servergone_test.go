package objects

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
)

// A pull that fails because nothing serves the holder's objects any more
// means the object's owner is gone (ErrLostOwnerDied for a Put); one
// that fails otherwise says nothing about the owner.
func TestServerGone(t *testing.T) {
	wrap := func(err error) error {
		return fmt.Errorf("transfer: fetching obj/x: transfer: dialling 127.0.0.2:1: %w", &os.SyscallError{Syscall: "connect", Err: err})
	}
	for _, tc := range []struct {
		err  error
		gone bool
	}{
		{wrap(syscall.ECONNREFUSED), true},
		{wrap(syscall.ECONNRESET), true},
		{wrap(syscall.EPIPE), true},
		{fmt.Errorf("transfer: handshake: reading hello: %w", io.EOF), true},
		{fmt.Errorf("transfer: reading: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("transfer: fetching: %w", context.DeadlineExceeded), false},
		{wrap(syscall.ETIMEDOUT), false},
		{errors.New("transfer: obj/x: no such object"), false},
	} {
		if got := serverGone(tc.err); got != tc.gone {
			t.Errorf("serverGone(%v) = %v, want %v", tc.err, got, tc.gone)
		}
	}
}
