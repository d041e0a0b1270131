package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ServerConfig says how to run a redis-server: the port and address it
// listens on, the directory of its append-only file and log, and the
// password clients must give (the cluster token).
type ServerConfig struct {
	Port     int    // required; pick a free one in tests
	Bind     string // "" means 127.0.0.1
	Dir      string // required; holds redis.conf, the AOF and redis.log
	Password string // required: Redis never runs open
	// Fsync is the append-only file's appendfsync: "" or "always" (the
	// default: Redis writes and syncs a batch before it answers, so what
	// a client was told is written survives a crash of the process or
	// the machine), or "everysec" (faster on slow disks; a crash may lose
	// about the last two seconds).
	Fsync string
}

// RedisServer is a running redis-server process started by
// StartRedisServer. It runs in its own process group, so that signals
// meant for the process that started it do not reach it.
type RedisServer struct {
	cfg  ServerConfig
	cmd  *exec.Cmd
	done chan struct{} // closed once the process was waited for
	err  error         // the process's exit, valid after done

	stopOnce sync.Once
}

// ErrNoRedisServer is returned by StartRedisServer when the redis-server
// program is not installed.
var ErrNoRedisServer = errors.New("redis-server is not installed: install Debian's redis-server package (apt-get install redis-server)")

// StartRedisServer starts redis-server with requirepass, appendonly and
// the given bind address, port and directory, and waits until it answers
// an authenticated PING. Its configuration file (which holds the
// password) is written 0600 into cfg.Dir, never passed on the command
// line where other users could read it. Stop ends it.
func StartRedisServer(ctx context.Context, cfg ServerConfig) (*RedisServer, error) {
	if cfg.Bind == "" {
		cfg.Bind = "127.0.0.1"
	}
	switch {
	case cfg.Port <= 0 || cfg.Port > 65535:
		return nil, fmt.Errorf("redis-server: port %d is not a TCP port (1-65535)", cfg.Port)
	case cfg.Dir == "":
		return nil, errors.New("redis-server: no directory for its data was given (ServerConfig.Dir)")
	case cfg.Password == "":
		return nil, errors.New("redis-server: no password was given (ServerConfig.Password); Redis never runs without one")
	case strings.ContainsAny(cfg.Password, " \t\r\n\"'"):
		return nil, errors.New("redis-server: the password must not contain spaces or quotes (use the hex cluster token)")
	}
	switch cfg.Fsync {
	case "":
		cfg.Fsync = "always"
	case "always", "everysec":
	default:
		return nil, fmt.Errorf("redis-server: Fsync %q is neither \"always\" nor \"everysec\"", cfg.Fsync)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedisServer
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("redis-server: directory %q: %w", cfg.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("redis-server: creating its directory: %w", err)
	}
	conf := filepath.Join(dir, "redis.conf")
	text := strings.Join([]string{
		"port " + strconv.Itoa(cfg.Port),
		"bind " + cfg.Bind,
		"protected-mode yes",
		"requirepass " + cfg.Password,
		"appendonly yes",
		"appendfsync " + cfg.Fsync,
		`save ""`,
		"dir " + dir,
		"logfile " + filepath.Join(dir, "redis.log"),
		"daemonize no",
		"",
	}, "\n")
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return nil, fmt.Errorf("redis-server: writing its configuration: %w", err)
	}
	if err := os.Chmod(conf, 0o600); err != nil { // an older file keeps its mode on write
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	cmd := exec.Command(bin, conf)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redis-server: starting %s: %w", bin, err)
	}
	s := &RedisServer{cfg: cfg, cmd: cmd, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls the server until it answers an authenticated PING, it
// exits, or ctx ends.
func (s *RedisServer) waitReady(ctx context.Context) error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.cfg.Password, Protocol: 2,
		DisableIdentity: true, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = c.Ping(ctx).Err(); last == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("redis-server exited while starting (%v); see %s", s.err, filepath.Join(s.cfg.Dir, "redis.log"))
		case <-ctx.Done():
			return fmt.Errorf("redis-server on %s: %w", s.Addr(), ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("redis-server on %s did not answer within 30s (last: %v); see %s", s.Addr(), last, filepath.Join(s.cfg.Dir, "redis.log"))
		case <-tick.C:
		}
	}
}

// Addr returns the server's address, IP:PORT.
func (s *RedisServer) Addr() string {
	return net.JoinHostPort(s.cfg.Bind, strconv.Itoa(s.cfg.Port))
}

// Pid returns the server's process ID.
func (s *RedisServer) Pid() int { return s.cmd.Process.Pid }

// Done is closed when the process has ended, whether Stop ended it or not.
func (s *RedisServer) Done() <-chan struct{} { return s.done }

// Stop ends the server (SIGTERM, which lets it finish its append-only
// file, then SIGKILL after 5 s) and waits until the process is gone.
func (s *RedisServer) Stop() {
	s.stopOnce.Do(func() {
		select {
		case <-s.done:
			return
		default:
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	<-s.done
}

// Kill ends the server at once with SIGKILL, as a crash would, and waits
// until the process is gone.
func (s *RedisServer) Kill() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Kill()
	})
	<-s.done
}
