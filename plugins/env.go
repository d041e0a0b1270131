package plugins

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"net"
	"strings"
	"time"

	"github.com/gray-ml/gray/envs"
	"github.com/gray-ml/gray/plugins/internal/wire"
	pb "github.com/gray-ml/gray/plugins/proto"
)

// Vector is an envs.Vector whose N sub-environments live in a plugin
// process, stepped with one round trip per batch. It checks everything the
// plugin sends against the declared spaces and restarts a plugin that
// crashed (see Options.MaxRestarts). It is not safe for concurrent use, like
// every envs.Vector.
type Vector struct {
	path string
	cfg  []byte
	n    int
	opts Options
	ctx  context.Context

	proc     *process
	env      pb.EnvServiceClient
	obsSpace envs.Space
	actSpace envs.Space
	obsSize  int
	actSize  int
	canDraw  bool

	seeds    []int64     // seeds of the last Reset, reused after a restart
	crashes  int         // restarts so far, to derive fresh seeds
	lastObs  [][]float64 // copies of the latest observations, for restarts
	restarts []time.Time // restart times within the window
	actBuf   []float64
	closed   bool
	fast     *fastConn // nil: step over gRPC
}

var _ envs.Vector = (*Vector)(nil)

// NewVector starts the environment plugin at path with n sub-environments
// made from cfg. ctx bounds the start and every later call.
func NewVector(ctx context.Context, path string, cfg envs.Config, n int, opts Options) (*Vector, error) {
	if n < 1 {
		return nil, fmt.Errorf("plugin %s: need at least one sub-environment, got %d", path, n)
	}
	cj, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: env config cannot be sent as JSON: %w", path, err)
	}
	v := &Vector{path: path, cfg: cj, n: n, opts: opts.withDefaults(), ctx: ctx}
	if err := v.launch(); err != nil {
		return nil, err
	}
	return v, nil
}

// launch starts (or restarts) the process and opens the sub-environments.
func (v *Vector) launch() error {
	p, err := start(v.ctx, v.path, wire.KindEnv, v.opts)
	if err != nil {
		return err
	}
	client := pb.NewEnvServiceClient(p.conn)
	var sp *pb.EnvSpaces
	err = p.call(v.ctx, "opening the environment", 0, func(ctx context.Context) (err error) {
		sp, err = client.Open(ctx, &pb.OpenEnvRequest{ConfigJson: v.cfg, NumEnvs: int32(v.n)})
		return err
	})
	if err == nil {
		err = v.setSpaces(p, sp)
	}
	if err != nil {
		p.kill()
		return err
	}
	v.proc, v.env = p, client
	v.fast = nil
	if !v.opts.DisableFastStep {
		v.fast = v.openFast()
	}
	return nil
}

// fastConn is the plugin's fast step socket (EnvService.OpenFastStep).
type fastConn struct {
	conn net.Conn
	r    wire.FastReader
	w    wire.FastWriter
	shm  *wire.Shared // nil: frames go over conn
}

// openFast connects to the plugin's fast step socket when it offers one;
// plugins that do not (other languages, older SDKs) are stepped over gRPC.
func (v *Vector) openFast() *fastConn {
	var fs *pb.FastStep
	err := v.proc.call(v.ctx, "opening the fast step socket", 0, func(ctx context.Context) (err error) {
		fs, err = v.env.OpenFastStep(ctx, &pb.Empty{})
		return err
	})
	if err != nil {
		if !strings.Contains(err.Error(), "not implemented") && !strings.Contains(err.Error(), "Method not found") {
			v.proc.warn("stepping over gRPC", "cause", err)
		}
		return nil
	}
	conn, err := net.DialTimeout(fs.Network, fs.Address, v.opts.StartTimeout)
	if err != nil {
		v.proc.warn("stepping over gRPC: cannot connect to the fast step socket", "cause", err)
		return nil
	}
	f := &fastConn{conn: conn, r: wire.FastReader{R: bufio.NewReaderSize(conn, 64<<10)}, w: wire.FastWriter{W: conn}}
	if !v.opts.DisableSharedMemory && wire.ShmSupported {
		if err := f.offerShared(v); err != nil {
			conn.Close()
			v.proc.warn("stepping over gRPC: the fast step socket failed while offering shared memory", "cause", err)
			return nil
		}
	}
	return f
}

// offerShared sends the plugin a shared step region (see wire/shm.go). A
// plugin that accepts it is stepped through it; one that does not (an
// older SDK) answers an error frame and is stepped over the socket. An
// error means the socket itself failed.
func (f *fastConn) offerShared(v *Vector) error {
	uc, ok := f.conn.(*net.UnixConn)
	if !ok {
		return nil
	}
	reqCap := 4 + 8*v.n*v.actSize
	ansCap := 13 + 8*v.n*(2*v.obsSize+1) + v.n + 4096 // room for an error message
	spin := v.opts.SpinWait
	if spin == 0 {
		spin = wire.DefaultSpin
	} else if spin < 0 {
		spin = 0
	}
	sh, file, err := wire.CreateShared(reqCap, ansCap, spin)
	if err != nil {
		v.proc.warn("stepping over the fast step socket: no shared memory", "cause", err)
		return nil
	}
	_ = f.conn.SetDeadline(time.Now().Add(v.opts.StartTimeout))
	defer f.conn.SetDeadline(time.Time{})
	err = wire.SendHello(uc, file)
	file.Close()
	if err != nil {
		sh.Close()
		return err
	}
	st, err := f.r.R.ReadByte()
	if err != nil {
		sh.Close()
		return err
	}
	if st == wire.ShmAccepted {
		f.shm = sh
		f.w.W = sh
		return nil
	}
	sh.Close()
	if err := f.r.R.UnreadByte(); err != nil {
		return err
	}
	var a wire.FastAnswer
	err = f.r.ReadAnswerInto(&a)
	var stepErr *wire.ErrFastStep
	if errors.As(err, &stepErr) {
		return nil // the refusal (an older plugin's "0 action values" error): keep the socket
	}
	if err == nil {
		return errors.New("the plugin answered an empty step request")
	}
	return err
}

var (
	errShmTimeout = errors.New("shared step region: call timeout")
	errShmExited  = errors.New("shared step region: the plugin exited while the host waited")
)

// stepFast runs one step over the fast socket. A broken stream is dropped
// (later steps go over gRPC) and reported like a failed gRPC call.
func (v *Vector) stepFast(actions []float64) (*pb.StepResponse, error) {
	f := v.fast
	timeout := v.opts.CallTimeout
	deadline := time.Now().Add(timeout)
	var a wire.FastAnswer
	var err error
	if f.shm != nil {
		err = f.w.WriteRequest(actions)
		if err == nil {
			var rd *bytes.Reader
			rd, err = f.shm.Wait(func() error {
				if v.proc.client.Exited() {
					return errShmExited
				}
				if time.Now().After(deadline) {
					return errShmTimeout
				}
				return v.ctx.Err()
			})
			if err == nil {
				f.r.R.Reset(rd)
				err = f.r.ReadAnswerInto(&a)
			}
		}
	} else {
		_ = f.conn.SetDeadline(deadline)
		err = f.w.WriteRequest(actions)
		if err == nil {
			err = f.r.ReadAnswerInto(&a)
		}
	}
	if err == nil {
		return &pb.StepResponse{Obs: a.Obs, Rewards: a.Rewards, Terminated: a.Terminated, Truncated: a.Truncated, FinalObs: a.Final}, nil
	}
	var stepErr *wire.ErrFastStep
	if errors.As(err, &stepErr) {
		return nil, v.proc.errorf("step", errors.New(stepErr.Msg))
	}
	v.closeFast()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errShmTimeout) {
		v.proc.kill()
		return nil, v.proc.errorf("step", &TimeoutError{Timeout: timeout})
	}
	if v.proc.crashed() {
		return nil, v.proc.errorf("step", fmt.Errorf("%w: %v", errCrashed, err))
	}
	return nil, v.proc.errorf("step", fmt.Errorf("fast step socket: %w", err))
}

func (v *Vector) closeFast() {
	if v.fast != nil {
		if v.fast.shm != nil {
			v.fast.shm.Close() // wakes the plugin's loop, which ends
		}
		v.fast.conn.Close()
		v.fast = nil
	}
}

func (v *Vector) setSpaces(p *process, sp *pb.EnvSpaces) error {
	obs, err := wire.SpaceFromProto(sp.GetObservationSpace())
	if err != nil {
		return p.errorf("opening the environment", fmt.Errorf("bad observation space: %w", err))
	}
	act, err := wire.SpaceFromProto(sp.GetActionSpace())
	if err != nil {
		return p.errorf("opening the environment", fmt.Errorf("bad action space: %w", err))
	}
	if int(sp.NumEnvs) != v.n {
		return p.errorf("opening the environment", fmt.Errorf("asked for %d sub-environments, got %d", v.n, sp.NumEnvs))
	}
	if v.obsSpace != nil && (obs.String() != v.obsSpace.String() || act.String() != v.actSpace.String()) {
		return p.errorf("restarting", fmt.Errorf("spaces changed across a restart: %s, %s became %s, %s", v.obsSpace, v.actSpace, obs, act))
	}
	v.obsSpace, v.actSpace = obs, act
	v.obsSize, v.actSize, v.canDraw = obs.Size(), act.Size(), sp.CanRender
	return nil
}

// NumEnvs implements envs.Vector.
func (v *Vector) NumEnvs() int { return v.n }

// ObservationSpace implements envs.Vector.
func (v *Vector) ObservationSpace() envs.Space { return v.obsSpace }

// ActionSpace implements envs.Vector.
func (v *Vector) ActionSpace() envs.Space { return v.actSpace }

// Path is the plugin's executable.
func (v *Vector) Path() string { return v.path }

// Reset implements envs.Vector.
func (v *Vector) Reset(seeds []int64) ([][]float64, error) {
	if err := v.usable(); err != nil {
		return nil, err
	}
	if len(seeds) != v.n {
		return nil, fmt.Errorf("plugin %s: Reset of %d sub-environments got %d seeds", v.path, v.n, len(seeds))
	}
	v.seeds = append(v.seeds[:0], seeds...)
	for {
		obs, err := v.reset(seeds)
		if errors.Is(err, errCrashed) {
			if rerr := v.restart(err); rerr != nil {
				return nil, rerr
			}
			continue
		}
		return obs, err
	}
}

func (v *Vector) reset(seeds []int64) ([][]float64, error) {
	var resp *pb.ResetResponse
	err := v.proc.call(v.ctx, "reset", 0, func(ctx context.Context) (err error) {
		resp, err = v.env.Reset(ctx, &pb.ResetRequest{Seeds: seeds})
		return err
	})
	if err != nil {
		return nil, err
	}
	obs, err := v.rows(resp.Obs, v.n, "reset", "observations")
	if err != nil {
		return nil, err
	}
	v.remember(obs)
	return obs, nil
}

// Step implements envs.Vector. If the plugin crashed, it is restarted and
// every sub-environment reset: the step reports each episode as truncated
// (zero reward) with the last observation seen as its final observation.
func (v *Vector) Step(actions [][]float64) (envs.VectorStep, error) {
	if err := v.usable(); err != nil {
		return envs.VectorStep{}, err
	}
	if v.lastObs == nil {
		return envs.VectorStep{}, fmt.Errorf("plugin %s: Step called before Reset", v.path)
	}
	if len(actions) != v.n {
		return envs.VectorStep{}, fmt.Errorf("plugin %s: Step of %d sub-environments got %d actions", v.path, v.n, len(actions))
	}
	v.actBuf = v.actBuf[:0]
	for i, a := range actions {
		if !v.actSpace.Contains(a) {
			return envs.VectorStep{}, fmt.Errorf("plugin %s: action %v for sub-environment %d is not in the action space %s", v.path, a, i, v.actSpace)
		}
		v.actBuf = append(v.actBuf, a...)
	}
	var resp *pb.StepResponse
	var err error
	if v.fast != nil {
		resp, err = v.stepFast(v.actBuf)
	} else {
		err = v.proc.call(v.ctx, "step", 0, func(ctx context.Context) (err error) {
			resp, err = v.env.Step(ctx, &pb.StepRequest{Actions: v.actBuf})
			return err
		})
	}
	if errors.Is(err, errCrashed) {
		return v.recover(err)
	}
	if err != nil {
		return envs.VectorStep{}, err
	}
	return v.decodeStep(resp)
}

func (v *Vector) decodeStep(resp *pb.StepResponse) (envs.VectorStep, error) {
	n := v.n
	if len(resp.Rewards) != n || len(resp.Terminated) != n || len(resp.Truncated) != n {
		return envs.VectorStep{}, v.proc.errorf("step", fmt.Errorf("answered %d rewards, %d terminated and %d truncated flags for %d sub-environments",
			len(resp.Rewards), len(resp.Terminated), len(resp.Truncated), n))
	}
	obs, err := v.rows(resp.Obs, n, "step", "observations")
	if err != nil {
		return envs.VectorStep{}, err
	}
	done := 0
	for i, r := range resp.Rewards {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return envs.VectorStep{}, v.proc.errorf("step", fmt.Errorf("sub-environment %d returned reward %v (rewards must be finite)", i, r))
		}
		if resp.Terminated[i] || resp.Truncated[i] {
			done++
		}
	}
	finals, err := v.rows(resp.FinalObs, done, "step", "final observations (one per finished episode)")
	if err != nil {
		return envs.VectorStep{}, err
	}
	out := envs.VectorStep{
		Obs: obs, Rewards: resp.Rewards, Terminated: resp.Terminated, Truncated: resp.Truncated,
		FinalObs: make([][]float64, n),
	}
	j := 0
	for i := range out.FinalObs {
		if resp.Terminated[i] || resp.Truncated[i] {
			out.FinalObs[i] = finals[j]
			j++
		}
	}
	v.remember(obs)
	return out, nil
}

// rows cuts flat into count rows of the observation size, checking each
// against the observation space.
func (v *Vector) rows(flat []float64, count int, op, what string) ([][]float64, error) {
	if len(flat) != count*v.obsSize {
		return nil, v.proc.errorf(op, fmt.Errorf("answered %d values of %s; expected %d rows of %d (observation space %s)",
			len(flat), what, count, v.obsSize, v.obsSpace))
	}
	out := make([][]float64, count)
	for i := range out {
		row := flat[i*v.obsSize : (i+1)*v.obsSize : (i+1)*v.obsSize]
		if !v.obsSpace.Contains(row) {
			return nil, v.proc.errorf(op, fmt.Errorf("%s row %d = %v is outside the declared observation space %s", what, i, row, v.obsSpace))
		}
		out[i] = row
	}
	return out, nil
}

// remember keeps a private copy of the latest observations: the caller owns
// the returned rows and may change them.
func (v *Vector) remember(obs [][]float64) {
	if v.lastObs == nil {
		v.lastObs = make([][]float64, v.n)
	}
	for i, o := range obs {
		v.lastObs[i] = append(v.lastObs[i][:0], o...)
	}
}

// restart replaces a crashed process, unless it crashed too often lately.
func (v *Vector) restart(cause error) error {
	now := time.Now()
	kept := v.restarts[:0]
	for _, t := range v.restarts {
		if now.Sub(t) < v.opts.RestartWindow {
			kept = append(kept, t)
		}
	}
	v.restarts = kept
	if v.opts.MaxRestarts < 0 || len(v.restarts) >= v.opts.MaxRestarts {
		v.closed = true
		return fmt.Errorf("plugin %s keeps crashing (%d restarts within %v); stopping: %w",
			v.path, len(v.restarts), v.opts.RestartWindow, cause)
	}
	v.restarts = append(v.restarts, now)
	v.proc.warn("environment plugin crashed; restarting it", "restart", len(v.restarts), "cause", cause)
	v.closeFast()
	v.proc.kill()
	return v.launch()
}

// recover restarts a crashed plugin in the middle of a run and resets every
// sub-environment with fresh seeds derived from the last ones.
func (v *Vector) recover(cause error) (envs.VectorStep, error) {
	final := v.lastObs
	v.lastObs = nil
	for {
		if err := v.restart(cause); err != nil {
			return envs.VectorStep{}, err
		}
		// Fresh seeds that no ordinary episode uses (those have k >= 0).
		v.crashes++
		seeds := make([]int64, v.n)
		for i := range seeds {
			seeds[i] = envs.AutoResetSeed(v.seeds[i], -v.crashes)
		}
		obs, err := v.reset(seeds)
		if errors.Is(err, errCrashed) {
			cause = err
			continue
		}
		if err != nil {
			return envs.VectorStep{}, err
		}
		out := envs.VectorStep{
			Obs: obs, Rewards: make([]float64, v.n), Terminated: make([]bool, v.n),
			Truncated: make([]bool, v.n), FinalObs: final,
		}
		for i := range out.Truncated {
			out.Truncated[i] = true
		}
		return out, nil
	}
}

// Render draws sub-environment i, for plugins that can draw.
func (v *Vector) Render(i int) (image.Image, error) {
	if err := v.usable(); err != nil {
		return nil, err
	}
	if !v.canDraw {
		return nil, fmt.Errorf("plugin %s: the environment cannot render", v.path)
	}
	var resp *pb.RenderResponse
	if err := v.proc.call(v.ctx, "render", 0, func(ctx context.Context) (err error) {
		resp, err = v.env.Render(ctx, &pb.RenderRequest{Index: int32(i)})
		return err
	}); err != nil {
		return nil, err
	}
	img, err := png.Decode(bytes.NewReader(resp.Png))
	if err != nil {
		return nil, v.proc.errorf("render", fmt.Errorf("answered an image that is not a PNG: %w", err))
	}
	return img, nil
}

func (v *Vector) usable() error {
	if v.closed || v.proc == nil {
		return fmt.Errorf("plugin %s: environment is closed", v.path)
	}
	return nil
}

// Close implements envs.Vector: it closes the sub-environments and stops
// the process.
func (v *Vector) Close() error {
	if v.proc == nil || v.closed && v.env == nil {
		return nil
	}
	v.closed = true
	v.closeFast()
	err := v.proc.call(v.ctx, "close", min(closeTimeout, v.opts.CallTimeout), func(ctx context.Context) error {
		_, err := v.env.Close(ctx, &pb.Empty{})
		return err
	})
	v.proc.kill()
	v.env = nil
	if errors.Is(err, errCrashed) {
		return nil
	}
	return err
}

// closeTimeout bounds an environment's Close (or the call timeout, when
// shorter): the run is over by then and a hung Close only delays the exit.
const closeTimeout = 5 * time.Second

// NewEnv starts the environment plugin at path as one envs.Env
// (envs.SingleEnv of a one-sub-environment Vector): it renders when the
// plugin can.
func NewEnv(ctx context.Context, path string, cfg envs.Config, opts Options) (envs.Env, error) {
	v, err := NewVector(ctx, path, cfg, 1, opts)
	if err != nil {
		return nil, err
	}
	env, err := envs.SingleEnv(v)
	if err != nil {
		v.Close()
		return nil, err
	}
	return env, nil
}
