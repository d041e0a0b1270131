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

// pinger is a child process that echoes pingSize-byte messages over a
// Unix socket pair.
type pinger struct {
	cmd *exec.Cmd
	c   net.Conn
	buf []byte
}

// startPinger starts the echoing child and warms the pair up.
func startPinger(ctx context.Context) (*pinger, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket pair: %w", err)
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
		return nil, fmt.Errorf("starting the ping-pong child: %w", err)
	}
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	p := &pinger{cmd: cmd, c: c, buf: make([]byte, pingSize)}
	// A few round trips first: the child's first read, page faults.
	for range 100 {
		if err := p.roundTrip(); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

func (p *pinger) roundTrip() error {
	if _, err := p.c.Write(p.buf); err != nil {
		return err
	}
	_, err := io.ReadFull(p.c, p.buf)
	return err
}

// close ends the child (it reads EOF) and waits for it.
func (p *pinger) close() error {
	p.c.Close()
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("ping-pong child: %w", err)
	}
	return nil
}

// pingPong returns the round trips per second of a pinger over d, leaving
// out the child's start.
func pingPong(ctx context.Context, d time.Duration) (float64, error) {
	p, err := startPinger(ctx)
	if err != nil {
		return 0, err
	}
	n, el, err := timed(d, p.roundTrip)
	if cerr := p.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return n / el.Seconds(), nil
}

// timed calls step until d has passed and returns the calls and the time
// they took.
func timed(d time.Duration, step func() error) (float64, time.Duration, error) {
	n := 0
	start := time.Now()
	end := start.Add(d)
	for ; time.Now().Before(end); n++ {
		if err := step(); err != nil {
			return 0, 0, err
		}
	}
	return float64(n), time.Since(start), nil
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

// Ratios to the floors. On a busy machine the rate of anything drifts
// from one second to the next, so a ratio of two rows measured seconds
// apart says little. A ratio row instead alternates the two loops in short
// slices and divides the totals: both see the same machine.

// slices is how many times a ratio row alternates its two loops.
const slices = 10

// latencyRatio returns how many ping-pong round trips one call of step
// takes, alternating the two for d in all.
func latencyRatio(ctx context.Context, d time.Duration, step func() error) (float64, error) {
	p, err := startPinger(ctx)
	if err != nil {
		return 0, err
	}
	defer p.close()
	slice := d / (2 * slices)
	var calls, trips float64
	var callTime, tripTime time.Duration
	for range slices {
		n, el, err := timed(slice, step)
		if err != nil {
			return 0, err
		}
		calls, callTime = calls+n, callTime+el
		if n, el, err = timed(slice, p.roundTrip); err != nil {
			return 0, err
		}
		trips, tripTime = trips+n, tripTime+el
	}
	if calls == 0 || trips == 0 {
		return 0, fmt.Errorf("no call finished within %v", slice)
	}
	return (callTime.Seconds() / calls) / (tripTime.Seconds() / trips), nil
}

// rateRatio returns the rate of units counted by work over the rate of
// floor's, alternating the two for d in all.
func rateRatio(d time.Duration, work, floor func(d time.Duration) (float64, error)) (float64, error) {
	slice := d / (2 * slices)
	var a, b float64
	var at, bt time.Duration
	for range slices {
		t0 := time.Now()
		n, err := work(slice)
		if err != nil {
			return 0, err
		}
		a, at = a+n, at+time.Since(t0)
		t0 = time.Now()
		if n, err = floor(slice); err != nil {
			return 0, err
		}
		b, bt = b+n, bt+time.Since(t0)
	}
	if b == 0 {
		return 0, errors.New("the floor counted nothing")
	}
	return (a / at.Seconds()) / (b / bt.Seconds()), nil
}
