package task

import (
	"errors"
	"fmt"
	"sync"
)

// Errors that keep their identity between processes.
//
// A task's error crosses from a worker to the driver as text: the values in
// its chain are gone on the other side. A sentinel error registered here
// (every process of a program registers the same ones at package
// initialisation) is sent by name beside the text, and the error decoded
// on the other side wraps the local sentinel of that name, so errors.Is
// holds in every process as it did in the one that made the error.

var (
	sentMu    sync.RWMutex
	sentinels = map[string]error{} // by message
	sentOrder []error              // registration order: the order they are tried in
)

// RegisterSentinel adds err to the errors that keep their identity between
// processes and returns it. A sentinel is known by its message, so
// registering the same error twice does nothing, and registering a
// different error with the same message panics: registration happens at
// package initialisation, where that is a programming error.
func RegisterSentinel(err error) error {
	if err == nil {
		panic("gray: RegisterError(nil): register a sentinel error value such as errors.New(\"...\")")
	}
	msg := err.Error()
	sentMu.Lock()
	defer sentMu.Unlock()
	if old, ok := sentinels[msg]; ok {
		if old != err {
			panic(fmt.Sprintf("gray: RegisterError: another error with the message %q is registered already; sentinels are sent between processes by message, so give this one a distinct message", msg))
		}
		return err
	}
	sentinels[msg] = err
	sentOrder = append(sentOrder, err)
	return err
}

// sentinelsIn returns the messages of the registered sentinels err wraps.
func sentinelsIn(err error) []string {
	sentMu.RLock()
	defer sentMu.RUnlock()
	var out []string
	for _, s := range sentOrder {
		if errors.Is(err, s) {
			out = append(out, s.Error())
		}
	}
	return out
}

// sentinelNamed returns the sentinel registered with message msg, or nil.
func sentinelNamed(msg string) error {
	sentMu.RLock()
	defer sentMu.RUnlock()
	return sentinels[msg]
}

// RemoteError is an error that crossed from another process: its text, and
// the registered sentinels it wrapped there, which it wraps here too.
type RemoteError struct {
	Msg   string
	Wraps []error
}

// Error returns the text of the original error.
func (e *RemoteError) Error() string { return e.Msg }

// Unwrap returns the sentinels the original error wrapped, so errors.Is
// and errors.As see them.
func (e *RemoteError) Unwrap() []error { return e.Wraps }
