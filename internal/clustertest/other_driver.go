package clustertest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Helper is a test function of the running test binary run again in a
// process of its own, as another driver of the cluster: it reads lines on
// its standard input and answers on its standard output, which Expect
// reads line by line. Its standard error goes to the test's.
type Helper struct {
	c     *Cluster
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

// StartHelper runs the test function named name (-test.run ^name$) with
// the cluster's environment and env added; the test ends it (Kill) when
// it ends.
func (c *Cluster) StartHelper(name string, env ...string) *Helper {
	c.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+name+"$", "-test.v")
	cmd.Env = append(c.Env(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	h := &Helper{c: c, cmd: cmd, stdin: stdin, lines: make(chan string, 64)}
	c.t.Cleanup(h.Kill)
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	return h
}

// Expect waits for a line that starts with prefix and returns it; it
// fails the test when the helper ends first or timeout passes.
func (h *Helper) Expect(prefix string, timeout time.Duration) string {
	h.c.t.Helper()
	deadline := time.After(timeout)
	var seen []string
	for {
		select {
		case line, ok := <-h.lines:
			if !ok {
				h.c.t.Fatalf("the helper driver ended before saying %q; it said %q", prefix, seen)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
			seen = append(seen, line)
		case <-deadline:
			h.c.t.Fatalf("the helper driver did not say %q within %v; it said %q", prefix, timeout, seen)
		}
	}
}

// Send writes line to the helper's standard input.
func (h *Helper) Send(line string) {
	h.c.t.Helper()
	if _, err := fmt.Fprintln(h.stdin, line); err != nil {
		h.c.t.Fatal(err)
	}
}

// CloseInput closes the helper's standard input.
func (h *Helper) CloseInput() { h.stdin.Close() }

// Wait reads the helper's output to its end and waits for it to exit:
// the error says why it failed.
func (h *Helper) Wait() error {
	for range h.lines {
	}
	return h.cmd.Wait()
}

// Kill ends the helper at once.
func (h *Helper) Kill() {
	h.stdin.Close()
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
}
