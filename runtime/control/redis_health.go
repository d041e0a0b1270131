package control

import (
	"context"
	"errors"
	"log"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// go-redis logs through a process-wide logger: during a Redis outage it
// writes a raw "pool.go:…: failed to dial" line several times a second
// into a driver's output. Gray's clients report the outage themselves
// (health below), once when it starts and once when it ends, so the
// library's logger is silenced as soon as this package is linked in.
func init() { redis.SetLogger(quietLog{}) }

type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...any) {}

// health follows whether a client reaches its Redis, from the outcome of
// every command, and says so when that changes: one line when Redis stops
// answering, one when it is back.
type health struct {
	addr string
	logf func(format string, args ...any)

	mu    sync.Mutex
	down  bool
	since time.Time
}

func newHealth(addr string, logf func(string, ...any)) *health {
	if logf == nil {
		logf = log.Printf
	}
	return &health{addr: addr, logf: logf}
}

// observe takes the outcome of one command (or pipeline).
func (h *health) observe(err error) {
	reached, known := reachedRedis(err)
	if !known {
		return // no news about the server (the caller gave up, say)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !reached && !h.down:
		h.down, h.since = true, time.Now()
		h.logf("gray: the cluster's Redis at %s is unreachable (%v); retrying, and saying so here when it is back", h.addr, err)
	case reached && h.down:
		h.down = false
		h.logf("gray: the cluster's Redis at %s is back after %s", h.addr, time.Since(h.since).Round(100*time.Millisecond))
	}
}

// reachedRedis says what a command's outcome shows: that the server
// answered (reached), that it could not be reached, or nothing (known
// false: the caller's context ended first, or the client was closed).
func reachedRedis(err error) (reached, known bool) {
	var reply redis.Error
	switch {
	case err == nil, errors.Is(err, redis.Nil), errors.As(err, &reply) && !isConnReply(err):
		return true, true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, redis.ErrClosed):
		return false, false
	}
	return false, true
}

// isConnReply reports replies of a server that cannot serve yet (it is
// loading its append-only file after a restart, or lost its primary).
func isConnReply(err error) bool {
	return redis.HasErrorPrefix(err, "LOADING") || redis.HasErrorPrefix(err, "MASTERDOWN")
}

// healthHook feeds every command's outcome to a health.
type healthHook struct{ h *health }

func (k healthHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (k healthHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		k.h.observe(err)
		return err
	}
}

func (k healthHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		k.h.observe(err)
		return err
	}
}
