package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// Physical limits: what the machine allows whatever the runtime does, so
// that the runtime's rows can be read as ratios to them (a ratio carries
// from machine to machine; a rate does not).
//
//   - A 64-byte ping-pong between two processes of this executable over a
//     Unix socket pair: the floor of a synchronous call through a socket.
//   - Starting and exiting this executable, on every core at once: the
//     floor of starting a worker process for an actor.

// Environment variables that make this executable a floor's child instead
// of the command line.
const (
	envPingPong = "GRAY_MICROBENCHMARK_PINGPONG" // echo 64-byte messages on fd 3
	envExit     = "GRAY_MICROBENCHMARK_EXIT"     // exit at once
)

// pingSize is the size of the ping-pong's messages.
const pingSize = 64

// floorChild runs this process as a floor's child when the environment
// says so, and reports whether it did; main then exits.
func floorChild() bool {
	switch {
	case os.Getenv(envExit) != "":
		return true
	case os.Getenv(envPingPong) != "":
		if err := echo(os.NewFile(3, "pingpong")); err != nil {
			fmt.Fprintln(os.Stderr, "gray microbenchmark: ping-pong child:", err)
			os.Exit(2)
		}
		return true
	}
	return false
}

// echo sends every pingSize-byte message it reads on f back, until EOF.
func echo(f *os.File) error {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, pingSize)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if _, err := c.Write(buf); err != nil {
			return err
		}
	}
}

// pingPong starts a child that echoes, then sends it pingSize-byte messages
// one at a time for d; it returns round trips per second (the child's
// start is not counted).
func pingPong(ctx context.Context, d time.Duration) (float64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("socket pair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "pingpong"), os.NewFile(uintptr(fds[1]), "pingpong")
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), envPingPong+"=1")
	cmd.ExtraFiles = []*os.File{theirs} // fd 3
	cmd.Stderr = os.Stderr
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		mine.Close()
		return 0, fmt.Errorf("starting the ping-pong child: %w", err)
	}
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, err
	}
	rate, err := pingLoop(c, d)
	c.Close() // EOF: the child exits
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("ping-pong child: %w", werr)
	}
	return rate, err
}

// pingLoop runs round trips over c for d and returns their rate.
func pingLoop(c net.Conn, d time.Duration) (float64, error) {
	buf := make([]byte, pingSize)
	// A few round trips first: the child's first read, page faults.
	for range 100 {
		if err := roundTrip(c, buf); err != nil {
			return 0, err
		}
	}
	n := 0
	start := time.Now()
	end := start.Add(d)
	for ; time.Now().Before(end); n++ {
		if err := roundTrip(c, buf); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func roundTrip(c net.Conn, buf []byte) error {
	if _, err := c.Write(buf); err != nil {
		return err
	}
	_, err := io.ReadFull(c, buf)
	return err
}

// processStarts starts and waits for this executable (exiting at once) on
// every core for d, and returns the number of processes run.
func processStarts(ctx context.Context, d time.Duration) (float64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	env := append(os.Environ(), envExit+"=1")
	return parallel(runtime.NumCPU(), func(int) (float64, error) {
		return until(d, func() (float64, error) {
			cmd := exec.CommandContext(ctx, exe)
			cmd.Env = env
			if err := cmd.Run(); err != nil {
				return 0, fmt.Errorf("starting %s: %w", exe, err)
			}
			return 1, nil
		})
	})
}

// ratio is one derived row: how many times the floor's round trip a row's
// round trip takes.
type ratio struct {
	row, floor string
}

// ratios appends the derived rows whose inputs were measured: the latency
// of a synchronous row over the socket floor's (a rate ratio inverted),
// and an actor-creation rate over the process-start rate.
func ratios(rows []row) []row {
	byName := map[string]row{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	var out []row
	for _, q := range []ratio{{rowTasksSync, rowPingPong}, {rowActorSync, rowPingPong}} {
		r, ok1 := byName[q.row]
		f, ok2 := byName[q.floor]
		if ok1 && ok2 && r.Rate > 0 {
			out = append(out, row{Name: q.row + " / physical limit", Rate: f.Rate / r.Rate, Unit: "x the floor's round trip"})
		}
	}
	if r, ok := byName[rowActorCreate]; ok {
		if f, ok := byName[rowProcStart]; ok && f.Rate > 0 {
			out = append(out, row{Name: rowActorCreate + " / process starts", Rate: r.Rate / f.Rate, Unit: "x the floor's rate"})
		}
	}
	return out
}
