package plugins

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCallTimeoutIsTheHostsOwn: a call carries no gRPC deadline. With one,
// the plugin's server resets the stream when it expires, and that reset
// could reach the host before the host's own timer fired: the host then
// reported "stream terminated by RST_STREAM" instead of the hang (the race
// behind a flaky TestBadPluginsGiveClearErrors/hang/grpc).
func TestCallTimeoutIsTheHostsOwn(t *testing.T) {
	p := &process{path: "test", opts: Options{}.withDefaults(), stderr: &tail{}}
	err := p.call(context.Background(), "step", time.Minute, func(ctx context.Context) error {
		if d, ok := ctx.Deadline(); ok {
			return errors.New("the call carries a deadline (" + time.Until(d).String() + ") that the plugin would enforce")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

func TestDefaultCallTimeout(t *testing.T) {
	for env, want := range map[string]time.Duration{"": time.Minute, "2.5": 2500 * time.Millisecond, "-1": time.Minute, "x": time.Minute} {
		t.Setenv(CallTimeoutEnv, env)
		if got := (Options{}).withDefaults().CallTimeout; got != want {
			t.Errorf("$%s=%q: call timeout %v, want %v", CallTimeoutEnv, env, got, want)
		}
	}
}
