// Package plugins runs Gray plugins on the host side: environments, models,
// action distributions and agents served by separate executables through
// hashicorp/go-plugin in gRPC mode. Importing it makes "plugin:<path>" a valid
// environment and algorithm name (envs.MakeVector("plugin:./bin/gridworld",
// ...), rllib.Lookup("plugin:./bin/myagent")); RegisterFolder and
// RegisterConfig register plugins under plain names.
//
// Plugins are written with package plugins/sdk (Go) or against
// plugins/proto/plugins.proto in any language with gRPC.
package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gray-ml/gray/plugins/internal/wire"
	pb "github.com/gray-ml/gray/plugins/proto"
)

// Options tune how the host runs a plugin process. The zero value means the
// defaults.
type Options struct {
	// StartTimeout bounds the handshake (default 30s).
	StartTimeout time.Duration
	// CallTimeout bounds every call but an agent's Train (default
	// DefaultCallTimeout); a plugin that does not answer in time is killed
	// and the call fails.
	CallTimeout time.Duration
	// MaxRestarts is how many times an environment plugin that crashed is
	// restarted within RestartWindow before the run stops with an error
	// (default 3; negative: never restart).
	MaxRestarts int
	// RestartWindow is the crash-loop window (default 1 minute).
	RestartWindow time.Duration
	// Log receives the plugin's log lines and host-side warnings (default
	// os.Stderr, the run's log).
	Log io.Writer
	// LogLevel filters the plugin's log lines (default info).
	LogLevel hclog.Level
	// DisableFastStep steps environments over gRPC even when the plugin
	// offers its faster step socket (for comparisons and debugging).
	DisableFastStep bool
	// DisableSharedMemory keeps fast steps on the socket instead of the
	// shared-memory region the host otherwise offers Go plugins (see
	// plugins/internal/wire/shm.go), for comparisons and debugging.
	DisableSharedMemory bool
	// SpinWait is how long each side of the shared-memory transport polls
	// for the other's frame before sleeping in a futex (default
	// wire.DefaultSpin, 50µs; negative: sleep at once). Spinning saves two
	// process wake-ups per step when both processes have a core.
	SpinWait time.Duration
}

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout()
	}
	if o.MaxRestarts == 0 {
		o.MaxRestarts = 3
	}
	if o.RestartWindow <= 0 {
		o.RestartWindow = time.Minute
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.LogLevel == hclog.NoLevel {
		o.LogLevel = hclog.Info
	}
	return o
}

// DefaultCallTimeout is the call timeout of plugins started without one:
// $GRAY_PLUGIN_CALL_TIMEOUT_S seconds when set to a positive number, else
// 60 seconds.
func DefaultCallTimeout() time.Duration {
	if s := os.Getenv(CallTimeoutEnv); s != "" {
		if secs, err := strconv.ParseFloat(s, 64); err == nil && secs > 0 && secs < 1e9 {
			return time.Duration(secs * float64(time.Second))
		}
	}
	return 60 * time.Second
}

// stderrTailLines is how much of a plugin's stderr an error shows.
const stderrTailLines = 20

// tail keeps the last lines written to it (a plugin's stderr).
type tail struct {
	mu    sync.Mutex
	lines []string
	part  strings.Builder
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range p {
		if b == '\n' {
			t.lines = append(t.lines, t.part.String())
			t.part.Reset()
			if len(t.lines) > stderrTailLines {
				t.lines = t.lines[len(t.lines)-stderrTailLines:]
			}
			continue
		}
		t.part.WriteByte(b)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := append([]string(nil), t.lines...)
	if t.part.Len() > 0 {
		lines = append(lines, t.part.String())
	}
	return strings.Join(lines, "\n")
}

// Error is a failure of a plugin: which plugin, what the host was doing,
// the cause and the tail of the plugin's stderr.
type Error struct {
	Path   string
	Op     string
	Err    error
	Stderr string
}

// Error implements error: the plugin, the call and its cause, with the
// plugin's last standard error lines when it wrote any.
func (e *Error) Error() string {
	msg := fmt.Sprintf("plugin %s: %s: %v", e.Path, e.Op, e.Err)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += "\n--- last lines of the plugin's stderr ---\n" + s
	} else {
		msg += " (the plugin wrote nothing to stderr)"
	}
	return msg
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// process is one running plugin executable.
type process struct {
	path   string
	kind   string
	opts   Options
	client *plugin.Client
	conn   *grpc.ClientConn
	stderr *tail
	desc   *pb.Description
}

// checkExecutable fails early, with a useful message, for paths that cannot
// be a plugin at all.
func checkExecutable(path string) error {
	if path == "" {
		return errors.New("empty plugin path (write plugin:<path to executable>)")
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("plugin %s: no such file (build it first, e.g. go build -o %s ./yourplugin)", path, path)
	case err != nil:
		return fmt.Errorf("plugin %s: %w", path, err)
	case st.IsDir():
		return fmt.Errorf("plugin %s: is a directory, not an executable", path)
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("plugin %s: not executable (chmod +x %s)", path, path)
	}
	return nil
}

// start launches the plugin at path, completes the handshake and checks
// that it serves the wanted kind.
func start(ctx context.Context, path, kind string, opts Options) (*process, error) {
	opts = opts.withDefaults()
	if err := checkExecutable(path); err != nil {
		return nil, err
	}
	p := &process{path: path, kind: kind, opts: opts, stderr: &tail{}}
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), wire.HostPIDEnv+"="+strconv.Itoa(os.Getpid()))
	p.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.Set(nil),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     opts.StartTimeout,
		// Stderr gets the plugin's own stderr (Go panics, Python, logs);
		// SyncStderr what a Go plugin writes to os.Stderr after Serve, which
		// go-plugin forwards over gRPC. Both feed the tail shown in errors.
		Stderr:     p.stderr,
		SyncStderr: io.MultiWriter(p.stderr, opts.Log),
		SyncStdout: opts.Log,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "plugin",
			Output: opts.Log,
			Level:  opts.LogLevel,
		}),
	})
	fail := func(op string, err error) (*process, error) {
		p.client.Kill()
		return nil, p.errorf(op, err)
	}
	rpc, err := p.client.Client()
	if err != nil {
		return fail("starting", explainStart(err))
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		return fail("starting", err)
	}
	p.conn = raw.(*grpc.ClientConn)
	cctx, cancel := context.WithTimeout(ctx, opts.CallTimeout)
	defer cancel()
	p.desc, err = pb.NewInfoClient(p.conn).Describe(cctx, &pb.Empty{})
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return fail("starting", errors.New("it answers the handshake but serves no gray.plugins.v1.Info service; is it a Gray plugin?"))
		}
		return fail("describing itself", err)
	}
	if p.desc.Kind != kind {
		return fail("starting", fmt.Errorf("it is a %q plugin (%s), but a %q plugin is needed here", p.desc.Kind, p.desc.Name, kind))
	}
	return p, nil
}

// explainStart turns go-plugin's start errors into advice.
func explainStart(err error) error {
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "failed to read any lines from plugin's stdout"):
		return fmt.Errorf("not a Gray plugin, or it failed at start: it exited without printing the handshake line: %w", err)
	case strings.Contains(msg, "incompatible api version"):
		return fmt.Errorf("%w (this host speaks plugin protocol version %d; rebuild the plugin against this version of Gray)", err, wire.ProtocolVersion)
	case strings.Contains(msg, "unrecognized remote plugin message"):
		return fmt.Errorf("%w (the plugin must print only the go-plugin handshake line to stdout; log to stderr instead)", err)
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("%w (no handshake line on stdout; is this a Gray plugin?)", err)
	case strings.Contains(msg, "plugin exited before we could connect"):
		return fmt.Errorf("%w (not a Gray plugin, or it failed at start)", err)
	}
	return err
}

func (p *process) errorf(op string, err error) error {
	return &Error{Path: p.path, Op: op, Err: err, Stderr: p.stderr.String()}
}

// call runs one RPC with the call timeout. A timeout kills the plugin, so
// that a hung plugin never holds the run; a crash is reported as errCrashed.
//
// The timeout is the host's own timer, not a gRPC deadline: a deadline
// travels to the plugin, whose server then resets the stream when it
// expires, and that reset can reach the host before the host's own timer
// fires, leaving a "stream terminated by RST_STREAM" error that no longer
// says the plugin hung.
func (p *process) call(ctx context.Context, op string, timeout time.Duration, f func(ctx context.Context) error) error {
	if timeout <= 0 {
		timeout = p.opts.CallTimeout
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut atomic.Bool
	timer := time.AfterFunc(timeout, func() {
		timedOut.Store(true)
		cancel()
	})
	err := f(cctx)
	timer.Stop()
	if err == nil {
		return nil
	}
	if timedOut.Load() && ctx.Err() == nil {
		p.client.Kill()
		return p.errorf(op, &TimeoutError{Timeout: timeout})
	}
	if p.crashed() {
		return p.errorf(op, fmt.Errorf("%w: %v", errCrashed, err))
	}
	if st, ok := status.FromError(err); ok {
		return p.errorf(op, errors.New(st.Message()))
	}
	return p.errorf(op, err)
}

// CallTimeoutEnv names the environment variable that sets the default
// call timeout (Options.CallTimeout) of every plugin the process starts, in
// seconds: `train --plugin-call-timeout-s` sets it, and worker processes
// inherit it.
const CallTimeoutEnv = "GRAY_PLUGIN_CALL_TIMEOUT_S"

// TimeoutError is a plugin call that got no answer within the call
// timeout; the plugin was killed.
type TimeoutError struct {
	Timeout time.Duration
}

// Error implements error, naming the settings that raise the timeout.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("no answer within %v; the plugin was killed (if it is just slow, raise the call timeout: train --plugin-call-timeout-s, plugin_call_timeout_s in an experiment file, or $%s)",
		e.Timeout, CallTimeoutEnv)
}

// errCrashed marks a call that failed because the plugin process died.
var errCrashed = errors.New("the plugin process exited")

// crashed reports whether the process has exited, giving go-plugin a moment
// to notice: the connection breaks before the exit is reaped.
func (p *process) crashed() bool {
	for i := 0; i < 50; i++ {
		if p.client.Exited() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// pid is the plugin's process id (for tests and logs).
func (p *process) pid() int {
	if rc := p.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// kill stops the process: gracefully when it answers, by force otherwise.
func (p *process) kill() { p.client.Kill() }

// warn writes a host-side warning to the run's log.
func (p *process) warn(msg string, args ...any) {
	hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: p.opts.Log}).Warn(msg, append([]any{"plugin", p.path}, args...)...)
}
