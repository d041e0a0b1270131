package control

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisConfig says where a cluster's Redis is and the password (the
// cluster token) it wants.
type RedisConfig struct {
	Addr     string // IP:PORT
	Password string
	// Logf receives the client's two messages about an outage: Redis is
	// unreachable, Redis is back (nil: log.Printf).
	Logf func(format string, args ...any)
}

// Redis is a cluster's shared tables, kept in Redis. One value serves one
// job (a driver's session) for the job-scoped tables (the actor table and
// error log a Recorder writes, object locations) and the whole cluster for
// the node and job tables.
//
// Redis stays off the per-task hot path: AddLocation, RemoveLocation and
// the job's load go to a writer goroutine that sends them in pipelined
// batches, so their callers never wait for Redis. Only the node table,
// jobs and explicit reads talk to Redis directly. After a Redis restart
// the client reconnects by itself; writes that failed meanwhile are
// retried in order.
type Redis struct {
	c   *redis.Client
	job string

	stats redisStats

	// the batching writer
	wmu      sync.Mutex
	pending  []writeOp
	enqueued uint64        // writes ever queued
	written  uint64        // writes ever sent (or dropped)
	batch    chan struct{} // closed after each batch; replaced under wmu
	kick     chan struct{} // cap 1: there is work
	stop     chan struct{}
	stopped  chan struct{}
	room     *sync.Cond // on wmu: the queue has room again, or Redis went away
	down     bool       // under wmu: the last batch could not reach Redis
	closing  bool       // under wmu: Close began; enqueue never waits
	// batchHook, under wmu, runs before each batch is taken (tests use it
	// to hold the writer back while writes queue).
	batchHook func()
	closeMu   sync.Once
	closeErr  error
}

// writeOp adds one write to a pipeline.
type writeOp func(ctx context.Context, p redis.Pipeliner)

// maxPending bounds the queued writes. While Redis answers, a writer that
// finds the queue full waits for room (Redis sets the pace); while Redis
// is unreachable the oldest writes are dropped instead (and counted in
// Stats().Dropped), so that an outage can neither stall the scheduler nor
// grow a driver's memory without end.
const maxPending = 1 << 20

// ErrRedisAuth is returned by DialRedis when Redis refuses the password.
var ErrRedisAuth = errors.New("Redis refused the password")

// maxBatch bounds the writes sent in one pipeline, so that a backlog goes
// out in pieces Redis and the garbage collector digest smoothly.
const maxBatch = 4096

// RedisStats counts what a Redis client sent: commands (each command of a
// pipeline counts), round trips (a pipeline is one), writes the batching
// writer gave up on, and writes still queued.
type RedisStats struct {
	Commands, RoundTrips, Dropped, Pending uint64
}

type redisStats struct {
	commands, roundTrips, dropped atomic.Uint64
}

// DialRedisRetry is DialRedis for a node starting beside its head: it
// retries while Redis does not answer (the head may still be starting
// it), every 100 ms until ctx ends, but not when Redis refuses the token.
func DialRedisRetry(ctx context.Context, cfg RedisConfig, job string) (*Redis, error) {
	for {
		store, err := DialRedis(ctx, cfg, job)
		if err == nil || errors.Is(err, ErrRedisAuth) {
			return store, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// DialRedis connects to a cluster's Redis and checks that it answers with
// the given password. job names the job the job-scoped tables belong to;
// "" is fine for a client that uses only the node and job tables.
func DialRedis(ctx context.Context, cfg RedisConfig, job string) (*Redis, error) {
	if cfg.Addr == "" {
		return nil, errors.New("control: no Redis address was given (IP:PORT of the cluster's head)")
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("control: Redis address %q is not IP:PORT: %w", cfg.Addr, err)
	}
	c := redis.NewClient(&redis.Options{
		Addr:            cfg.Addr,
		Password:        cfg.Password,
		Protocol:        2,
		DisableIdentity: true,
		DialTimeout:     2 * time.Second,
		ReadTimeout:     3 * time.Second,
		WriteTimeout:    3 * time.Second,
		MaxRetries:      3,
		MinRetryBackoff: 20 * time.Millisecond,
		MaxRetryBackoff: 200 * time.Millisecond,
	})
	r := &Redis{
		c:       c,
		job:     job,
		batch:   make(chan struct{}),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	r.room = sync.NewCond(&r.wmu)
	c.AddHook(countHook{&r.stats})
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		if strings.Contains(err.Error(), "NOAUTH") || strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), "invalid password") {
			return nil, fmt.Errorf("control: Redis at %s: %w: give the cluster's token (--token or GRAY_TOKEN): %w", cfg.Addr, ErrRedisAuth, err)
		}
		return nil, fmt.Errorf("control: Redis at %s does not answer (is the head started? `gray start --head`): %w", cfg.Addr, err)
	}
	// From here on an outage is reported as it starts and ends (DialRedis
	// reported a failed first contact itself).
	c.AddHook(healthHook{newHealth(cfg.Addr, cfg.Logf)})
	go r.writer()
	return r, nil
}

// Job returns the job this client's job-scoped tables belong to.
func (r *Redis) Job() string { return r.job }

// Stats returns the counts of commands sent so far.
func (r *Redis) Stats() RedisStats {
	r.wmu.Lock()
	pending := uint64(len(r.pending))
	r.wmu.Unlock()
	return RedisStats{
		Commands:   r.stats.commands.Load(),
		RoundTrips: r.stats.roundTrips.Load(),
		Dropped:    r.stats.dropped.Load(),
		Pending:    pending,
	}
}

// Close writes what is queued (waiting at most 5 s for Redis), stops the
// writer and closes the connections. It reports writes it could not send.
func (r *Redis) Close() error {
	r.closeMu.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ferr := r.Flush(ctx)
		r.wmu.Lock()
		r.closing = true
		r.room.Broadcast()
		r.wmu.Unlock()
		close(r.stop)
		<-r.stopped
		if ferr != nil {
			r.closeErr = fmt.Errorf("control: closing the Redis store: %d writes were not sent: %w", r.Stats().Pending, ferr)
		}
		if err := r.c.Close(); err != nil && r.closeErr == nil {
			r.closeErr = fmt.Errorf("control: closing the Redis store: %w", err)
		}
	})
	return r.closeErr
}

// Flush waits until every write queued before the call was sent to Redis
// (or given up on), or ctx ends.
func (r *Redis) Flush(ctx context.Context) error {
	r.wmu.Lock()
	target := r.enqueued
	r.wmu.Unlock()
	for {
		r.wmu.Lock()
		done, ch := r.written >= target, r.batch
		r.wmu.Unlock()
		if done {
			return nil
		}
		r.wake()
		select {
		case <-ch:
		case <-r.stopped:
			return errors.New("control: the Redis store is closed")
		case <-ctx.Done():
			return fmt.Errorf("control: flushing writes to Redis: %w", ctx.Err())
		}
	}
}

// enqueue queues a write for the writer; it never blocks on Redis.
func (r *Redis) enqueue(op writeOp) {
	r.wmu.Lock()
	for len(r.pending) >= maxPending && !r.down && !r.closing {
		r.room.Wait()
	}
	if len(r.pending) >= maxPending {
		r.pending = r.pending[1:]
		r.written++
		r.stats.dropped.Add(1)
	}
	r.pending = append(r.pending, op)
	r.enqueued++
	r.wmu.Unlock()
	r.wake()
}

func (r *Redis) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// writer sends queued writes in pipelined batches: whatever queued while
// the previous batch was in flight goes in the next one.
func (r *Redis) writer() {
	defer close(r.stopped)
	backoff := time.Duration(0)
	for {
		select {
		case <-r.stop:
			return
		case <-r.kick:
		}
		if !r.sendBatch() {
			// Redis is unreachable: try again, backing off to 1 s.
			backoff = min(max(2*backoff, 50*time.Millisecond), time.Second)
			select {
			case <-r.stop:
				return
			case <-time.After(backoff):
			}
			r.wake()
			continue
		}
		backoff = 0
	}
}

// sendBatch sends the queued writes as one pipeline. It reports false
// when Redis could not be reached; the writes then stay queued, in order.
func (r *Redis) sendBatch() bool {
	r.wmu.Lock()
	if hook := r.batchHook; hook != nil {
		r.wmu.Unlock()
		hook()
		r.wmu.Lock()
	}
	ops := r.pending
	if len(ops) > maxBatch {
		ops = ops[:maxBatch:maxBatch]
		r.pending = r.pending[maxBatch:]
	} else {
		r.pending = nil
	}
	more := len(r.pending) > 0
	r.room.Broadcast()
	r.wmu.Unlock()
	if len(ops) == 0 {
		return true
	}
	if more {
		defer r.wake()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p := r.c.Pipeline()
	for _, op := range ops {
		op(ctx, p)
	}
	cmds, err := p.Exec(ctx)
	if err != nil && retryable(err, cmds) {
		r.wmu.Lock()
		r.pending = append(ops, r.pending...)
		r.down = true
		r.room.Broadcast()
		r.wmu.Unlock()
		return false
	}
	if err != nil {
		log.Printf("gray: control store: a batch of %d writes to Redis failed: %v", len(ops), err)
	}
	r.wmu.Lock()
	r.down = false
	r.written += uint64(len(ops))
	close(r.batch)
	r.batch = make(chan struct{})
	r.wmu.Unlock()
	return true
}

// retryable reports whether a failed pipeline should be sent again: when
// Redis could not be reached, or answered that it is still loading.
func retryable(err error, cmds []redis.Cmder) bool {
	for _, c := range cmds {
		e := c.Err()
		if e == nil || errors.Is(e, redis.Nil) {
			continue
		}
		var re redis.Error
		if !errors.As(e, &re) {
			return true // a connection error
		}
		msg := re.Error()
		if strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "BUSY") {
			return true
		}
	}
	var re redis.Error
	return len(cmds) == 0 || !errors.As(err, &re)
}

// countHook counts commands and round trips.
type countHook struct{ s *redisStats }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.s.commands.Add(1)
		h.s.roundTrips.Add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.s.commands.Add(uint64(len(cmds)))
		h.s.roundTrips.Add(1)
		return next(ctx, cmds)
	}
}

// Key layout. Cluster-wide: gray:nodes (set of node IDs), gray:node:<id>
// (hash), gray:node-events (pub/sub), gray:jobs (hash). Job-scoped keys
// start with gray:job:<job>:.
const (
	keyNodes      = "gray:nodes"
	keyNodePrefix = "gray:node:"
	chanNodes     = "gray:node-events"
	keyJobs       = "gray:jobs"
)

func nodeKey(id string) string { return keyNodePrefix + id }

func (r *Redis) jobKey(parts ...string) string {
	return "gray:job:" + r.job + ":" + strings.Join(parts, ":")
}
