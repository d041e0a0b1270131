package control

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// envOutageChild makes TestRedisOutageIsReportedOnce's binary the child
// that talks to Redis (through the address it holds).
const envOutageChild = "GRAY_TEST_OUTAGE_REDIS"

// During a Redis outage a client says once, in Gray's words, that Redis
// is unreachable and once that it is back, and the library's own log
// lines ("redis: … pool.go: … failed to dial") never reach the output.
// The client runs in a child process, so that its whole stderr is seen;
// the parent steps it through commands on stdin.
func TestRedisOutageIsReportedOnce(t *testing.T) {
	if addr := os.Getenv(envOutageChild); addr != "" {
		outageChild(addr)
		return
	}
	srv, cfg := startServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRedisOutageIsReportedOnce$")
	cmd.Env = append(os.Environ(), envOutageChild+"="+srv.Addr())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	answers := bufio.NewScanner(stdout)
	ask := func() string {
		t.Helper()
		fmt.Fprintln(stdin, "ask")
		if !answers.Scan() {
			t.Fatalf("the child stopped answering; its stderr:\n%s", stderr.String())
		}
		return answers.Text()
	}
	if a := ask(); a != "ok" {
		t.Fatalf("before the outage: %s", a)
	}
	srv.Stop()
	for range 10 {
		if a := ask(); a == "ok" {
			t.Fatal("a command succeeded while Redis was stopped")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	again, err := StartRedisServer(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Stop)
	for ask() != "ok" {
		if ctx.Err() != nil {
			t.Fatal("the client did not reach Redis again within 30s")
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	out := stderr.String()
	for _, raw := range []string{"pool.go", "failed to dial", "redis: "} {
		if strings.Contains(out, raw) {
			t.Errorf("the library's log reached the output (%q):\n%s", raw, out)
		}
	}
	if n := strings.Count(out, "is unreachable"); n != 1 {
		t.Errorf("%d lines say Redis is unreachable, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "is back after"); n != 1 {
		t.Errorf("%d lines say Redis is back, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, srv.Addr()) {
		t.Errorf("the messages do not name Redis's address %s:\n%s", srv.Addr(), out)
	}
}

// outageChild answers each line of stdin with the outcome of one read
// of the node table: "ok" or the error.
func outageChild(addr string) {
	r, err := DialRedis(context.Background(), RedisConfig{Addr: addr, Password: testToken}, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := r.Nodes(ctx)
		cancel()
		if err != nil {
			fmt.Println(strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			fmt.Println("ok")
		}
	}
	r.Close()
	_, _ = io.Copy(io.Discard, os.Stdin)
}
