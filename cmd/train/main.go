// Command train trains reinforcement-learning agents and inspects their
// runs:
//
//	train --env CartPole-v1 --alg PPO --config '{"lr": 0.0003}' --stop '{"episode_reward_mean": 475}'
//	train -f configs/cartpole-ppo.yaml
//	train --alg PPO --show-config
//	train rollout --checkpoint ~/gray_results/default/PPO_CartPole-v1_.../checkpoint_10 --episodes 5
//	train plot ~/gray_results/default -o curve.png
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1
	exitInternal    = 2
	exitInterrupted = 130 // the shell's code for a process ended by SIGINT
)

func main() {
	setup()
	// The first Ctrl-C (or SIGTERM) cancels the run's context: the run
	// stops after the current iteration and saves a checkpoint. A second
	// one quits at once. (Signals are handled by hand rather than with
	// signal.NotifyContext because serveIfWorker ignored SIGINT, and
	// stopping a notification would put that ignoring back.)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
			fmt.Fprintln(os.Stderr, "\ntrain: stopping after this iteration and saving a checkpoint (Ctrl-C again to quit at once)")
		case <-done:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintln(os.Stderr, "train: quitting without a checkpoint")
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	close(done)
	cancel()
	os.Exit(code)
}

// errInterrupted reports a run that Ctrl-C ended cleanly.
var errInterrupted = errors.New("interrupted")

// run executes the command line args and returns the exit code. It never
// panics: a panic anywhere below becomes a message naming it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "train: internal error: %v\nthis is a bug: please report it with the command line", p)
			if os.Getenv("GRAY_DEBUG") != "" {
				fmt.Fprintf(stderr, "\n%s", debug.Stack())
			} else {
				fmt.Fprint(stderr, " (set GRAY_DEBUG=1 to print the stack)")
			}
			fmt.Fprintln(stderr)
			code = exitInternal
		}
	}()
	cmd := newRootCmd(stdout, stderr)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "train: %v\n", err)
	var pe interface{ PanicStack() []byte }
	if errors.As(err, &pe) && os.Getenv("GRAY_DEBUG") != "" {
		fmt.Fprintf(stderr, "%s\n", pe.PanicStack())
	}
	return exitError
}
