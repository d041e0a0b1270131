package plugins

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gray-ml/gray"
	"github.com/gray-ml/gray/envs"
	pb "github.com/gray-ml/gray/plugins/proto"
	"github.com/gray-ml/gray/plugins/sdk"
)

// bins holds the example and test plugins, built once for the package.
var bins string

// Paths of the plugins TestMain builds.
var (
	gridworldBin  string
	faultyBin     string
	faultyDistBin string
	agentBin      string
	pythonGridBin string
)

// workerFolderEnv names the plugins folder that the test's gray worker
// processes register, as the platform's RegisterDefaults does in every
// process.
const workerFolderEnv = "GRAY_PLUGINS_TEST_FOLDER"

func TestMain(m *testing.M) {
	if path := os.Getenv("GRAY_PLUGINS_TEST_HOST"); path != "" {
		hostMain(path) // a host process for TestSIGKILLedHostLeavesNoPlugin
		return
	}
	// In a worker process (the test binary started again by gray), register
	// the same plugins as the driver, then serve tasks and never return.
	if dir := os.Getenv(workerFolderEnv); dir != "" {
		if err := RegisterFolder(dir); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
	}
	gray.ServeIfWorker()
	dir, err := os.MkdirTemp("", "gray-plugins-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins = dir
	gridworldBin = filepath.Join(dir, "gridworld")
	faultyBin = filepath.Join(dir, "faulty")
	faultyDistBin = filepath.Join(dir, "faultydist")
	agentBin = filepath.Join(dir, "agent")
	build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
		"./examples/gridworld", "./internal/testplugins/faulty", "./internal/testplugins/faultydist", "./examples/agent")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the test plugins:", err)
		os.Exit(1)
	}
	pythonGridBin, _ = filepath.Abs("examples/python-env/gridworld.py")
	// A plugins folder for the rollout-worker test, registered here and,
	// through the environment, in every worker process.
	folder := filepath.Join(dir, "folder")
	err = os.MkdirAll(filepath.Join(folder, "env"), 0o755)
	if err == nil {
		err = os.Symlink(gridworldBin, filepath.Join(folder, "env", workerGridName))
	}
	if err == nil {
		err = os.Setenv(workerFolderEnv, folder)
	}
	if err == nil {
		err = RegisterFolder(folder)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := gray.Init(context.Background(), gray.Options{NumCPUs: 2}); err != nil {
		fmt.Fprintln(os.Stderr, "gray.Init:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = gray.Shutdown()
	os.RemoveAll(dir)
	os.Exit(code)
}

// quiet keeps plugin logs out of the test output unless -v.
func quiet(t *testing.T, o Options) Options {
	if !testing.Verbose() {
		o.Log = io.Discard
	}
	return o
}

func randomActions(rng *rand.Rand, space envs.Space, n int) [][]float64 {
	acts := make([][]float64, n)
	for i := range acts {
		acts[i] = space.Sample(rng)
	}
	return acts
}

// rollout steps v with seeded random actions and returns every
// observation, reward and flag seen.
func rollout(t *testing.T, v envs.Vector, steps int, seed uint64) (trace []float64, episodes int) {
	t.Helper()
	n := v.NumEnvs()
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(seed)*100 + int64(i)
	}
	obs, err := v.Reset(seeds)
	if err != nil {
		t.Fatalf("reset: %v", err)
	}
	for _, o := range obs {
		trace = append(trace, o...)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	for s := 0; s < steps; s++ {
		st, err := v.Step(randomActions(rng, v.ActionSpace(), n))
		if err != nil {
			t.Fatalf("step %d: %v", s, err)
		}
		for i := 0; i < n; i++ {
			if !v.ObservationSpace().Contains(st.Obs[i]) {
				t.Fatalf("step %d: observation %v outside %s", s, st.Obs[i], v.ObservationSpace())
			}
			trace = append(trace, st.Obs[i]...)
			trace = append(trace, st.Rewards[i])
			if st.Terminated[i] || st.Truncated[i] {
				episodes++
				if st.FinalObs[i] == nil {
					t.Fatalf("step %d: sub-environment %d finished an episode without a final observation", s, i)
				}
			} else if st.FinalObs[i] != nil {
				t.Fatalf("step %d: sub-environment %d has a final observation mid-episode", s, i)
			}
		}
	}
	return trace, episodes
}

func TestGoEnvPluginStepsLikeAnEnvironment(t *testing.T) {
	ctx := context.Background()
	opts := quiet(t, Options{})
	a, err := NewVector(ctx, gridworldBin, envs.Config{"size": 4, "max_steps": 20}, 8, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got := a.ObservationSpace().String(); got != "Box(0, 1, [2])" {
		t.Errorf("observation space %s, want Box(0, 1, [2])", got)
	}
	if got := a.ActionSpace().String(); got != "Discrete(4)" {
		t.Errorf("action space %s, want Discrete(4)", got)
	}
	trace1, episodes := rollout(t, a, 200, 1)
	if episodes < 8*200/20 {
		t.Errorf("%d episodes ended in 200 steps of 8 sub-environments with a 20-step limit; want at least %d", episodes, 8*200/20)
	}
	b, err := NewVector(ctx, gridworldBin, envs.Config{"size": 4, "max_steps": 20}, 8, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	trace2, _ := rollout(t, b, 200, 1)
	if !slicesEqual(trace1, trace2) {
		t.Error("two runs with the same seeds and actions differ")
	}
}

func slicesEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPluginNamesResolveThroughTheEnvRegistry(t *testing.T) {
	v, err := envs.MakeVector(Prefix+gridworldBin, nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.NumEnvs() != 3 {
		t.Errorf("NumEnvs = %d, want 3", v.NumEnvs())
	}
	rollout(t, v, 10, 2)

	_, err = envs.MakeVector(Prefix+filepath.Join(bins, "nope"), nil, 1)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing plugin: got %v, want an error saying there is no such file", err)
	}
}

func TestSingleEnvAdapterAndRender(t *testing.T) {
	env, err := NewEnv(context.Background(), gridworldBin, nil, quiet(t, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if _, err := env.Reset(3); err != nil {
		t.Fatal(err)
	}
	// Walking right then down reaches the goal of the 5×5 default grid.
	var st envs.Step
	for _, a := range []float64{1, 1, 1, 1, 1, 2, 2, 2, 2} {
		if st, err = env.Step([]float64{a}); err != nil {
			t.Fatal(err)
		}
		if st.Done() {
			break
		}
	}
	if !st.Terminated || st.Reward != 1 || st.Obs[0] != 1 || st.Obs[1] != 1 {
		t.Errorf("walking to the goal ended with %+v, want terminated at (1, 1) with reward 1", st)
	}
	img, err := env.(envs.Renderer).Render()
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 80 || b.Dy() != 80 {
		t.Errorf("rendered %v, want 80×80", b)
	}
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plugin.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadPluginsGiveClearErrors covers every way a plugin can be wrong
// before or while it steps: each error names the plugin and the cause.
func TestBadPluginsGiveClearErrors(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(notExec, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		path   string
		mode   string // GRAY_FAULTY_MODE
		cfg    envs.Config
		opts   Options
		want   []string // substrings of the error
		atStep bool     // the error comes from Step, not NewVector
	}{
		{name: "missing", path: filepath.Join(t.TempDir(), "missing"), want: []string{"no such file"}},
		{name: "directory", path: t.TempDir(), want: []string{"is a directory"}},
		{name: "not executable", path: notExec, want: []string{"not executable", "chmod +x"}},
		{name: "not a plugin", path: writeScript(t, "echo 'I am just a script' >&2\nexit 2\n"),
			want: []string{"not a Gray plugin", "I am just a script"}},
		{name: "garbage before handshake", path: faultyBin, mode: "garbage",
			want: []string{"Unrecognized remote plugin message", "this is not a handshake line", "about to print garbage"}},
		{name: "wrong protocol version", path: faultyBin, mode: "version",
			want: []string{"incompatible API version", "rebuild the plugin"}},
		{name: "no handshake", path: faultyBin, mode: "silent", opts: Options{StartTimeout: time.Second},
			want: []string{"timeout", "hanging before the handshake"}},
		{name: "wrong kind", path: agentBin, want: []string{`"agent" plugin`, `"env" plugin is needed`}},
		{name: "bad config", path: gridworldBin, cfg: envs.Config{"colour": 1},
			want: []string{`unknown config key "colour"`}},
		{name: "wrong observation size", path: faultyBin, cfg: envs.Config{"wrong_size": true},
			want: []string{"[0 0 0]", "Box(-1, 1, [2])"}},
		{name: "observation outside space", path: faultyBin, cfg: envs.Config{"bad_obs_after": 3}, atStep: true,
			want: []string{"[5 0]", "outside", "Box(-1, 1, [2])"}},
		{name: "NaN reward", path: faultyBin, cfg: envs.Config{"nan_after": 2}, atStep: true,
			want: []string{"returned reward NaN", "must be finite"}},
		{name: "step error", path: faultyBin, cfg: envs.Config{"step_error_after": 2}, atStep: true,
			want: []string{"step", "the wheels came off at step 2"}},
		{name: "hang", path: faultyBin, cfg: envs.Config{"hang_after": 2}, atStep: true, opts: Options{CallTimeout: time.Second},
			want: []string{"no answer within 1s", "killed"}},
	}
	for _, c := range cases {
		for _, tr := range transports {
			if tr.name != "shm" && !c.atStep {
				continue // the transports differ only in how Step travels
			}
			name := c.name
			if tr.name != "shm" {
				name += "/" + tr.name
			}
			t.Run(name, func(t *testing.T) {
				t.Setenv("GRAY_FAULTY_MODE", c.mode)
				opts := c.opts
				opts.DisableFastStep, opts.DisableSharedMemory = tr.opts.DisableFastStep, tr.opts.DisableSharedMemory
				if tr.name == "declined" {
					t.Setenv(sdk.NoSharedMemoryEnv, "1")
				}
				err := func() error {
					v, err := NewVector(context.Background(), c.path, c.cfg, 1, quiet(t, opts))
					if err != nil {
						return err
					}
					defer v.Close()
					if _, err := v.Reset([]int64{1}); err != nil {
						return err
					}
					if !c.atStep {
						t.Fatal("the plugin started and reset without an error")
					}
					for i := 0; i < 5; i++ {
						if _, err := v.Step([][]float64{{0}}); err != nil {
							return err
						}
					}
					return nil
				}()
				if err == nil {
					t.Fatal("no error")
				}
				msg := err.Error()
				if !strings.Contains(msg, c.path) {
					t.Errorf("error does not name the plugin %s:\n%s", c.path, msg)
				}
				for _, w := range c.want {
					if !strings.Contains(msg, w) {
						t.Errorf("error lacks %q:\n%s", w, msg)
					}
				}
			})
		}
	}
}

// transports are the ways a Go plugin's steps can travel: the shared
// region (the default), the fast step socket and gRPC.
var transports = []struct {
	name string
	opts Options
}{
	{"shm", Options{}},
	{"socket", Options{DisableSharedMemory: true}},
	{"declined", Options{}}, // the plugin refuses the region, as older SDKs do
	{"grpc", Options{DisableFastStep: true}},
}

// transport names the way v's steps travel.
func transport(v *Vector) string {
	switch {
	case v.fast == nil:
		return "grpc"
	case v.fast.shm == nil:
		return "socket"
	}
	return "shm"
}

// TestCrashedPluginIsRestarted: the plugin dies while the host waits for a
// step's answer (in the shared region's futex, on the socket, in gRPC); the
// host notices, restarts it and the run goes on over the same transport.
func TestCrashedPluginIsRestarted(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) { testCrashRestart(t, tr.name, tr.opts) })
	}
}

func testCrashRestart(t *testing.T, want string, opts Options) {
	if want == "declined" {
		t.Setenv(sdk.NoSharedMemoryEnv, "1")
		want = "socket"
	}
	v, err := NewVector(context.Background(), faultyBin, envs.Config{"crash_after": 4}, 2, quiet(t, opts))
	if err != nil {
		t.Fatal(err)
	}
	if got := transport(v); got != want {
		t.Fatalf("steps travel by %s, want %s", got, want)
	}
	defer v.Close()
	if _, err := v.Reset([]int64{1, 2}); err != nil {
		t.Fatal(err)
	}
	firstPID := v.proc.pid()
	crashes := 0
	for s := 1; s <= 10; s++ {
		st, err := v.Step([][]float64{{0}, {1}})
		if err != nil {
			t.Fatalf("step %d: %v", s, err)
		}
		if s%4 == 0 {
			crashes++
			for i := 0; i < 2; i++ {
				if !st.Truncated[i] || st.FinalObs[i] == nil || st.Rewards[i] != 0 {
					t.Errorf("step %d (a crash): sub-environment %d got %+v, want a truncated episode with its final observation", s, i, st)
				}
			}
		}
	}
	if got := transport(v); got != want {
		t.Errorf("after restarts steps travel by %s, want %s", got, want)
	}
	if crashes != 2 || v.proc.pid() == firstPID {
		t.Errorf("expected 2 crashes and a new process; got %d crashes, pid %d → %d", crashes, firstPID, v.proc.pid())
	}
}

func TestCrashLoopStopsWithAClearError(t *testing.T) {
	v, err := NewVector(context.Background(), faultyBin, envs.Config{"crash_after": 1}, 1, quiet(t, Options{MaxRestarts: 2}))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Reset([]int64{1}); err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 10; s++ {
		if _, err = v.Step([][]float64{{0}}); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("a plugin crashing at every step ran 10 steps without an error")
	}
	for _, w := range []string{faultyBin, "keeps crashing", "2 restarts", "crashing on purpose"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if _, err := v.Step([][]float64{{0}}); err == nil {
		t.Error("Step after a crash loop succeeded; want an error")
	}
}

// hostMain is a host process: it starts the plugin at path, prints the
// plugin's pid and waits to be killed.
func hostMain(path string) {
	v, err := NewVector(context.Background(), path, nil, 1, Options{Log: io.Discard})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	// One step first, so that the plugin waits for the next one in its
	// transport's loop (asleep in the shared region's futex by default).
	if _, err := v.Reset([]int64{1}); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if _, err := v.Step([][]float64{{0}}); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(v.proc.pid())
	time.Sleep(time.Minute)
}

func alive(pid int) bool {
	// A zombie is dead for our purpose; /proc tells them apart.
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	fields := strings.Fields(string(data))
	return len(fields) > 2 && fields[2] != "Z"
}

func TestSIGKILLedHostLeavesNoPlugin(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs POSIX signals")
	}
	plugins := map[string]string{"go": gridworldBin}
	if pythonReady() == "" {
		plugins["python"] = pythonGridBin
	}
	for name, path := range plugins {
		t.Run(name, func(t *testing.T) {
			host := exec.Command(os.Args[0], "-test.run=^$")
			host.Env = append(os.Environ(), "GRAY_PLUGINS_TEST_HOST="+path)
			out, err := host.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			defer host.Process.Kill()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("host said nothing: %v", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil || pid <= 0 {
				t.Fatalf("host said %q, want the plugin's pid", line)
			}
			if !alive(pid) {
				t.Fatalf("plugin %d is not running while its host lives", pid)
			}
			if err := host.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = host.Wait()
			deadline := time.Now().Add(5 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("plugin %d still runs 5s after its host was SIGKILLed", pid)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// pythonReady says why the Python plugin cannot run here, or "".
func pythonReady() string {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		return "/usr/bin/python3 is missing"
	}
	var stderr bytes.Buffer
	cmd := exec.Command("/usr/bin/python3", "-c", "import grpc, google.protobuf")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "/usr/bin/python3 lacks grpcio or protobuf (apt-get install python3-grpcio): " + strings.TrimSpace(stderr.String())
	}
	return ""
}

func TestPythonEnvPlugin(t *testing.T) {
	if why := pythonReady(); why != "" {
		t.Skip(why)
	}
	v, err := NewVector(context.Background(), pythonGridBin, envs.Config{"max_steps": 10}, 4, quiet(t, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if got := v.ObservationSpace().String() + " " + v.ActionSpace().String(); got != "Box(0, 1, [2]) Discrete(4)" {
		t.Errorf("spaces %s, want Box(0, 1, [2]) Discrete(4)", got)
	}
	_, episodes := rollout(t, v, 50, 3)
	if episodes < 4*50/10 {
		t.Errorf("%d episodes in 50 steps of 4 sub-environments with a 10-step limit; want at least 20", episodes)
	}
	if _, err := NewVector(context.Background(), pythonGridBin, envs.Config{"colour": 1}, 1, quiet(t, Options{})); err == nil ||
		!strings.Contains(err.Error(), "unknown config keys") {
		t.Errorf("bad config: got %v, want an error about unknown config keys", err)
	}
}

// TestHostValidatesWhatPluginsSend feeds the host side answers that a plugin
// in another language could send (the Go SDK checks its own): each is an
// error naming the plugin and the cause.
func TestHostValidatesWhatPluginsSend(t *testing.T) {
	v, err := NewVector(context.Background(), gridworldBin, nil, 2, quiet(t, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ok := func() *pb.StepResponse {
		return &pb.StepResponse{Obs: []float64{0, 0, 1, 1}, Rewards: []float64{0, 1},
			Terminated: []bool{false, true}, Truncated: []bool{false, false}, FinalObs: []float64{1, 1}}
	}
	if _, err := v.decodeStep(ok()); err != nil {
		t.Fatalf("a valid answer: %v", err)
	}
	cases := []struct {
		name   string
		change func(r *pb.StepResponse)
		want   string
	}{
		{"short observations", func(r *pb.StepResponse) { r.Obs = r.Obs[:3] }, "answered 3 values of observations; expected 2 rows of 2"},
		{"observation outside", func(r *pb.StepResponse) { r.Obs[1] = 7 }, "observations row 0 = [0 7] is outside the declared observation space"},
		{"NaN observation", func(r *pb.StepResponse) { r.Obs[0] = math.NaN() }, "is outside the declared observation space"},
		{"NaN reward", func(r *pb.StepResponse) { r.Rewards[0] = math.NaN() }, "sub-environment 0 returned reward NaN"},
		{"infinite reward", func(r *pb.StepResponse) { r.Rewards[1] = math.Inf(1) }, "returned reward +Inf"},
		{"missing flags", func(r *pb.StepResponse) { r.Truncated = nil }, "0 truncated flags for 2 sub-environments"},
		{"missing final observation", func(r *pb.StepResponse) { r.FinalObs = nil }, "answered 0 values of final observations"},
		{"final observation outside", func(r *pb.StepResponse) { r.FinalObs[0] = -1 }, "final observations (one per finished episode) row 0 = [-1 1] is outside"},
	}
	for _, c := range cases {
		r := ok()
		c.change(r)
		_, err := v.decodeStep(r)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), gridworldBin) {
			t.Errorf("%s: got %v, want an error naming the plugin and containing %q", c.name, err, c.want)
		}
	}
	if _, err := v.Step([][]float64{{0}, {9}}); err == nil || !strings.Contains(err.Error(), "action [9] for sub-environment 1 is not in the action space Discrete(4)") {
		t.Errorf("a bad action: %v", err)
	}
}
