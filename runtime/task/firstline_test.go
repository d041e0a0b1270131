package task

import (
	"errors"
	"testing"
)

func TestFirstLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"one line", "one line"},
		{"boom\nremote stack:\ngoroutine 1", "boom"},
		{"\nstarts with a newline", ""},
		{"ends with one\n", "ends with one"},
	} {
		if got := FirstLine(c.in); got != c.want {
			t.Errorf("FirstLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// What it is for: a failure quoting a panic's leaves its stack out.
	e := &TaskError{Function: "f", Worker: "worker 1", Message: "panic: x", Stack: "goroutine 7 [running]:", Cause: errors.New("x")}
	if got, want := FirstLine(e.Error()), "task f failed on worker 1: panic: x"; got != want {
		t.Errorf("FirstLine of a panicked task's error = %q, want %q", got, want)
	}
}
