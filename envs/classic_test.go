package envs

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustMake(t testing.TB, name string, cfg Config) Env {
	t.Helper()
	e, err := Make(name, cfg)
	if err != nil {
		t.Fatalf("Make(%q): %v", name, err)
	}
	return e
}

func mustStep(t testing.TB, e Env, action ...float64) Step {
	t.Helper()
	s, err := e.Step(action)
	if err != nil {
		t.Fatalf("Step(%v): %v", action, err)
	}
	return s
}

func near(t testing.TB, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol {
			t.Fatalf("%s: value %d = %.17g, want %.17g (got %v, want %v)", what, i, got[i], want[i], got, want)
		}
	}
}

// The expected values below were computed by hand (a short script written
// straight from Gymnasium's equations and constants, independent of this
// package) from the stated starting state.
func TestHandComputedTrajectories(t *testing.T) {
	type step struct {
		action []float64
		obs    []float64
		reward float64
	}
	cases := []struct {
		name  string
		set   func(Env)
		steps []step
	}{
		{
			name: "CartPole-v1",
			set:  func(e Env) { e.(*CartPole).state = [4]float64{0, 0, 0, 0} },
			steps: []step{
				{[]float64{1}, []float64{0, 0.1951219512195122, 0, -0.2926829268292683}, 1},
				{[]float64{1}, []float64{0.0039024390243902443, 0.3902439024390244, -0.005853658536585366, -0.5853658536585366}, 1},
				{[]float64{0}, []float64{0.011707317073170733, 0.19520443149030264, -0.0175609756097561, -0.2945326253197778}, 1},
			},
		},
		{
			name: "Pendulum-v1",
			set:  func(e Env) { p := e.(*Pendulum); p.th, p.thDot = math.Pi/4, 0.5 },
			steps: []step{
				{[]float64{1.5}, []float64{0.661360882752803, 0.7500678521070164, 1.2553300858899106}, -0.6441002750680849},
				{[]float64{-2}, []float64{0.6025860542486777, 0.7980539124802344, 1.517880974970173}, -0.8809686659750222},
			},
		},
		{
			name: "MountainCar-v0",
			set:  func(e Env) { m := e.(*MountainCar); m.pos, m.vel = -0.5, 0 },
			steps: []step{
				{[]float64{2}, []float64{-0.49917684300416926, 0.0008231569958307428}, -1},
				{[]float64{2}, []float64{-0.49753668667935325, 0.0016401563248160246}, -1},
				{[]float64{0}, []float64{-0.4970917969323474, 0.00044488974700586273}, -1},
			},
		},
		{
			name: "MountainCarContinuous-v0",
			set:  func(e Env) { m := e.(*MountainCarContinuous); m.pos, m.vel = -0.5, 0 },
			steps: []step{
				{[]float64{0.7}, []float64{-0.4991268515586853, 0.0008731569978408515}, -0.049},
				{[]float64{-1}, []float64{-0.4999370574951172, -0.0008102175779640675}, -0.1},
			},
		},
		{
			name: "Acrobot-v1",
			set:  func(e Env) { e.(*Acrobot).s = [4]float64{0.1, -0.05, 0.2, -0.3} },
			steps: []step{
				{[]float64{2}, []float64{0.9937701724599994, 0.11144884175630962, 0.9983147262739127, -0.05803195072236365, -0.08540039067648086, 0.22178662004399446}, -1},
				{[]float64{0}, []float64{0.9955620695427794, 0.09410720316584723, 0.9994266207906316, -0.03385896712865239, -0.08471736130076947, 0.01351547979774606}, -1},
				{[]float64{1}, []float64{0.9978247444869708, 0.06592252490242977, 0.9998068104139087, -0.019655580631624887, -0.1917681045680545, 0.12160562702046004}, -1},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustMake(t, tc.name, nil)
			if _, err := e.Reset(1); err != nil {
				t.Fatal(err)
			}
			tc.set(e)
			for i, st := range tc.steps {
				s := mustStep(t, e, st.action...)
				near(t, "obs", s.Obs, st.obs, 1e-12)
				if math.Abs(s.Reward-st.reward) > 1e-12 {
					t.Fatalf("step %d: reward %.17g, want %.17g", i, s.Reward, st.reward)
				}
				if s.Done() {
					t.Fatalf("step %d: episode ended unexpectedly: %+v", i, s)
				}
			}
		})
	}
}

// TestCartPoleMatchesGymnasium replays a trajectory printed by Gymnasium's
// own CartPole (float32 observations) through ours: from each printed state
// and the action that produced the next, we must reach the next printed
// state, and terminate exactly where Gymnasium did.
func TestCartPoleMatchesGymnasium(t *testing.T) {
	traj := [][4]float64{
		{-0.03783562, 0.22712974, 0.02664461, -0.270979},
		{-0.03329302, 0.42186156, 0.02122504, -0.55514044},
		{-0.02485579, 0.61667913, 0.01012223, -0.8410613},
		{-0.01252221, 0.8116615, -0.006699, -1.130544},
		{0.00371102, 1.0068705, -0.02930988, -1.4253204},
		{0.02384843, 1.2023422, -0.05781629, -1.7270179},
		{0.04789528, 1.007927, -0.09235664, -1.4528707},
		{0.06805381, 1.2040539, -0.12141406, -1.7729217},
		{0.09213489, 1.0104924, -0.1568725, -1.5203251},
		{0.11234474, 0.8175758, -0.18727899, -1.280435},
		{0.12869626, 0.6252673, -0.21288769, -1.0517548}, // terminated
	}
	e := mustMake(t, "CartPole-v1", nil).(*CartPole)
	if _, err := e.Reset(0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(traj); i++ {
		e.state = traj[i]
		action := 0.0
		if traj[i+1][1] > traj[i][1] { // the cart sped up to the right
			action = 1
		}
		s := mustStep(t, e, action)
		near(t, "obs", s.Obs, traj[i+1][:], 2e-6)
		wantTerm := i+1 == len(traj)-1
		if s.Terminated != wantTerm || s.Truncated || s.Reward != 1 {
			t.Fatalf("step %d: terminated=%v truncated=%v reward=%v, want terminated=%v, reward 1",
				i, s.Terminated, s.Truncated, s.Reward, wantTerm)
		}
	}
}

func TestCartPoleTermination(t *testing.T) {
	deg12 := 12 * 2 * math.Pi / 360
	cases := []struct {
		name  string
		state [4]float64 // chosen so one Euler step lands just inside or outside
		term  bool
	}{
		{"x past +2.4", [4]float64{2.4, 0.01 / 0.02, 0, 0}, true},
		{"x past -2.4", [4]float64{-2.4, -0.01 / 0.02, 0, 0}, true},
		{"x just inside", [4]float64{2.39, 0, 0, 0}, false},
		{"theta past +12°", [4]float64{0, 0, deg12, 0.001 / 0.02}, true},
		{"theta past -12°", [4]float64{0, 0, -deg12, -0.001 / 0.02}, true},
		{"theta just inside", [4]float64{0, 0, deg12 - 0.01, 0}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustMake(t, "CartPole-v1", nil).(*CartPole)
			if _, err := e.Reset(0); err != nil {
				t.Fatal(err)
			}
			e.state = tc.state
			s := mustStep(t, e, 1)
			if s.Terminated != tc.term || s.Truncated {
				t.Fatalf("terminated=%v truncated=%v, want terminated=%v (obs %v)", s.Terminated, s.Truncated, tc.term, s.Obs)
			}
			if s.Reward != 1 {
				t.Fatalf("reward %v, want 1 (also on the terminating step)", s.Reward)
			}
		})
	}
}

func TestSuttonBartoReward(t *testing.T) {
	e := mustMake(t, "CartPole-v1", Config{"sutton_barto_reward": true}).(*CartPole)
	if _, err := e.Reset(0); err != nil {
		t.Fatal(err)
	}
	if s := mustStep(t, e, 0); s.Reward != 0 || s.Done() {
		t.Fatalf("non-terminal step: %+v, want reward 0", s)
	}
	e.state = [4]float64{2.4, 1, 0, 0}
	if s := mustStep(t, e, 0); s.Reward != -1 || !s.Terminated {
		t.Fatalf("terminal step: %+v, want reward -1 and terminated", s)
	}
}

func TestTerminalRewards(t *testing.T) {
	t.Run("MountainCar reaches the flag", func(t *testing.T) {
		e := mustMake(t, "MountainCar-v0", nil).(*MountainCar)
		_, _ = e.Reset(0)
		e.pos, e.vel = 0.49, 0.05
		s := mustStep(t, e, 2)
		if !s.Terminated || s.Reward != -1 {
			t.Fatalf("%+v, want terminated with reward -1", s)
		}
	})
	t.Run("MountainCar left wall stops the car", func(t *testing.T) {
		e := mustMake(t, "MountainCar-v0", nil).(*MountainCar)
		_, _ = e.Reset(0)
		e.pos, e.vel = -1.19, -0.05
		s := mustStep(t, e, 0)
		if s.Obs[0] != -1.2 || s.Obs[1] != 0 {
			t.Fatalf("obs %v, want [-1.2 0]", s.Obs)
		}
	})
	t.Run("MountainCarContinuous goal bonus minus action cost", func(t *testing.T) {
		e := mustMake(t, "MountainCarContinuous-v0", nil).(*MountainCarContinuous)
		_, _ = e.Reset(0)
		e.pos, e.vel = 0.44, 0.05
		s := mustStep(t, e, 0.5)
		if !s.Terminated || math.Abs(s.Reward-(100-0.1*0.25)) > 1e-12 {
			t.Fatalf("%+v, want terminated with reward 99.975", s)
		}
	})
	t.Run("Acrobot terminal step rewards 0", func(t *testing.T) {
		e := mustMake(t, "Acrobot-v1", nil).(*Acrobot)
		_, _ = e.Reset(0)
		e.s = [4]float64{math.Pi, 0, 0, 0} // both links straight up: tip at height 2
		s := mustStep(t, e, 1)
		if !s.Terminated || s.Reward != 0 {
			t.Fatalf("%+v, want terminated with reward 0", s)
		}
	})
	t.Run("Pendulum upright at rest costs nothing", func(t *testing.T) {
		e := mustMake(t, "Pendulum-v1", nil).(*Pendulum)
		_, _ = e.Reset(0)
		e.th, e.thDot = 2*math.Pi, 0 // normalises to 0
		s := mustStep(t, e, 0)
		if math.Abs(s.Reward) > 1e-20 || s.Done() {
			t.Fatalf("%+v, want reward 0, not done", s)
		}
	})
}

func TestTimeLimits(t *testing.T) {
	cases := []struct {
		name  string
		limit int
		set   func(Env) // keeps the episode from terminating
		act   []float64
	}{
		{"CartPole-v0", 200, func(e Env) { e.(*CartPole).state = [4]float64{} }, nil},
		{"CartPole-v1", 500, func(e Env) { e.(*CartPole).state = [4]float64{} }, nil},
		{"Pendulum-v1", 200, func(Env) {}, []float64{0}},
		{"MountainCar-v0", 200, func(Env) {}, []float64{1}},
		{"MountainCarContinuous-v0", 999, func(Env) {}, []float64{0}},
		{"Acrobot-v1", 500, func(Env) {}, []float64{1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustMake(t, tc.name, nil)
			if got := e.(Specer).Spec().MaxEpisodeSteps; got != tc.limit {
				t.Fatalf("Spec().MaxEpisodeSteps = %d, want %d", got, tc.limit)
			}
			if _, err := e.Reset(3); err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= tc.limit; i++ {
				tc.set(e)
				act := tc.act
				if act == nil { // CartPole: alternate pushes to stay balanced
					act = []float64{float64(i % 2)}
				}
				s := mustStep(t, e, act...)
				if s.Terminated {
					t.Fatalf("step %d terminated; the test keeps the state safe", i)
				}
				if s.Truncated != (i == tc.limit) {
					t.Fatalf("step %d: truncated=%v, want %v", i, s.Truncated, i == tc.limit)
				}
			}
			if _, err := e.Step(tc.act); err == nil || !strings.Contains(err.Error(), "Reset") {
				t.Fatalf("Step after truncation: err = %v, want an error asking for Reset", err)
			}
		})
	}
}

func TestTerminationBeatsTruncation(t *testing.T) {
	// On the last allowed step a terminating episode is terminated, not
	// truncated, as with Gymnasium's TimeLimit.
	e := mustMake(t, "CartPole-v1", Config{"max_episode_steps": 1}).(*CartPole)
	_, _ = e.Reset(0)
	e.state = [4]float64{2.4, 1, 0, 0}
	s := mustStep(t, e, 1)
	if !s.Terminated || s.Truncated {
		t.Fatalf("%+v, want terminated and not truncated", s)
	}
}

func TestInitialStateDistributions(t *testing.T) {
	cases := []struct {
		name   string
		lo, hi []float64 // bounds of the state behind the first observation
		state  func(Env) []float64
	}{
		{"CartPole-v1", []float64{-.05, -.05, -.05, -.05}, []float64{.05, .05, .05, .05},
			func(e Env) []float64 { return e.(*CartPole).state[:] }},
		{"Pendulum-v1", []float64{-math.Pi, -1}, []float64{math.Pi, 1},
			func(e Env) []float64 { p := e.(*Pendulum); return []float64{p.th, p.thDot} }},
		{"MountainCar-v0", []float64{-.6, 0}, []float64{-.4, 0},
			func(e Env) []float64 { m := e.(*MountainCar); return []float64{m.pos, m.vel} }},
		{"MountainCarContinuous-v0", []float64{-.6, 0}, []float64{-.4, 0},
			func(e Env) []float64 { m := e.(*MountainCarContinuous); return []float64{m.pos, m.vel} }},
		{"Acrobot-v1", []float64{-.1, -.1, -.1, -.1}, []float64{.1, .1, .1, .1},
			func(e Env) []float64 { return e.(*Acrobot).s[:] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustMake(t, tc.name, nil)
			mins := append([]float64(nil), tc.hi...)
			maxs := append([]float64(nil), tc.lo...)
			for seed := int64(0); seed < 2000; seed++ {
				obs, err := e.Reset(seed)
				if err != nil {
					t.Fatal(err)
				}
				if !e.ObservationSpace().Contains(obs) {
					t.Fatalf("seed %d: first observation %v outside %s", seed, obs, e.ObservationSpace())
				}
				for i, v := range tc.state(e) {
					if v < tc.lo[i] || v > tc.hi[i] {
						t.Fatalf("seed %d: state %d = %v outside [%v, %v]", seed, i, v, tc.lo[i], tc.hi[i])
					}
					mins[i], maxs[i] = math.Min(mins[i], v), math.Max(maxs[i], v)
				}
			}
			// Uniform draws fill the range: each end is approached within 2%.
			for i := range mins {
				if w := tc.hi[i] - tc.lo[i]; mins[i] > tc.lo[i]+0.02*w || maxs[i] < tc.hi[i]-0.02*w {
					t.Fatalf("state %d spans [%v, %v], want nearly [%v, %v]", i, mins[i], maxs[i], tc.lo[i], tc.hi[i])
				}
			}
		})
	}
}

func TestSeedingDeterminism(t *testing.T) {
	for _, name := range classicNames() {
		t.Run(name, func(t *testing.T) {
			run := func(seed int64) []float64 {
				e := mustMake(t, name, nil)
				obs, err := e.Reset(seed)
				if err != nil {
					t.Fatal(err)
				}
				out := append([]float64(nil), obs...)
				rng := rand.New(rand.NewPCG(1, 2))
				for i := 0; i < 50; i++ {
					s := mustStep(t, e, e.ActionSpace().Sample(rng)...)
					out = append(out, s.Obs...)
					out = append(out, s.Reward)
					if s.Done() {
						break
					}
				}
				return out
			}
			a, b, c := run(42), run(42), run(43)
			near(t, "same seed", a, b, 0)
			same := len(a) == len(c)
			for i := 0; same && i < len(a); i++ {
				same = a[i] == c[i]
			}
			if same {
				t.Fatalf("seeds 42 and 43 gave the same trajectory")
			}
		})
	}
}

func TestResetAgainReproduces(t *testing.T) {
	e := mustMake(t, "CartPole-v1", nil)
	a, _ := e.Reset(7)
	mustStep(t, e, 1)
	b, _ := e.Reset(7)
	near(t, "Reset(7) twice", a, b, 0)
}

func TestBadActions(t *testing.T) {
	cases := []struct {
		env    string
		action []float64
		want   []string
	}{
		{"CartPole-v1", []float64{2}, []string{"CartPole-v1", "[2]", "Discrete(2)"}},
		{"CartPole-v1", []float64{-1}, []string{"outside", "Discrete(2)"}},
		{"CartPole-v1", []float64{0.5}, []string{"[0.5]", "Discrete(2)"}},
		{"CartPole-v1", []float64{math.NaN()}, []string{"NaN", "Discrete(2)"}},
		{"CartPole-v1", []float64{0, 1}, []string{"2 values", "Discrete(2)"}},
		{"CartPole-v1", nil, []string{"0 values"}},
		{"MountainCar-v0", []float64{3}, []string{"MountainCar-v0", "Discrete(3)"}},
		{"Acrobot-v1", []float64{math.Inf(1)}, []string{"+Inf", "Discrete(3)"}},
		{"Pendulum-v1", []float64{2.5}, []string{"Pendulum-v1", "[2.5]", "Box(-2, 2, [1])", "Clip"}},
		{"Pendulum-v1", []float64{math.NaN()}, []string{"NaN"}},
		{"Pendulum-v1", []float64{1, 1}, []string{"2 values", "needs 1"}},
		{"MountainCarContinuous-v0", []float64{-1.5}, []string{"MountainCarContinuous-v0", "Box(-1, 1, [1])"}},
		{"MountainCarContinuous-v0", []float64{math.Inf(-1)}, []string{"-Inf"}},
	}
	for _, tc := range cases {
		t.Run(tc.env+"/"+strings.Join(tc.want, ","), func(t *testing.T) {
			e := mustMake(t, tc.env, nil)
			_, _ = e.Reset(0)
			_, err := e.Step(tc.action)
			if err == nil {
				t.Fatalf("Step(%v) succeeded, want an error", tc.action)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not mention %q", err, w)
				}
			}
			// A rejected action leaves the episode running.
			mustStep(t, e, e.ActionSpace().Sample(rand.New(rand.NewPCG(0, 0)))...)
		})
	}
}

func TestStepOutsideEpisode(t *testing.T) {
	e := mustMake(t, "CartPole-v1", nil)
	if _, err := e.Step([]float64{0}); err == nil || !strings.Contains(err.Error(), "before Reset") {
		t.Fatalf("Step before Reset: %v, want an error saying to Reset first", err)
	}
	_, _ = e.Reset(0)
	e.(*CartPole).state = [4]float64{2.4, 1, 0, 0}
	if s := mustStep(t, e, 1); !s.Terminated {
		t.Fatal("expected termination")
	}
	_, err := e.Step([]float64{1})
	if err == nil || !strings.Contains(err.Error(), "after the episode ended") {
		t.Fatalf("Step after termination: %v, want an error", err)
	}
	if _, err := e.Reset(1); err != nil {
		t.Fatal(err)
	}
	mustStep(t, e, 1)
}

func classicNames() []string {
	names := make([]string, len(classicSpecs))
	for i, s := range classicSpecs {
		names[i] = s.Name
	}
	return names
}

// TestRandomPolicyEpisodes runs random episodes on every built-in
// environment: each must end within its time limit, keep observations in
// their space and rewards finite.
func TestRandomPolicyEpisodes(t *testing.T) {
	for _, spec := range classicSpecs {
		t.Run(spec.Name, func(t *testing.T) {
			e := mustMake(t, spec.Name, nil)
			rng := rand.New(rand.NewPCG(9, 9))
			for ep := int64(0); ep < 5; ep++ {
				obs, err := e.Reset(ep)
				if err != nil {
					t.Fatal(err)
				}
				if !e.ObservationSpace().Contains(obs) {
					t.Fatalf("reset obs %v outside %s", obs, e.ObservationSpace())
				}
				steps := 0
				for {
					s := mustStep(t, e, e.ActionSpace().Sample(rng)...)
					steps++
					if math.IsNaN(s.Reward) || math.IsInf(s.Reward, 0) {
						t.Fatalf("step %d: reward %v", steps, s.Reward)
					}
					if !e.ObservationSpace().Contains(s.Obs) {
						t.Fatalf("step %d: obs %v outside %s", steps, s.Obs, e.ObservationSpace())
					}
					if s.Done() {
						break
					}
					if steps > spec.MaxEpisodeSteps {
						t.Fatalf("episode ran past its limit of %d steps", spec.MaxEpisodeSteps)
					}
				}
				if steps > spec.MaxEpisodeSteps {
					t.Fatalf("episode of %d steps, limit %d", steps, spec.MaxEpisodeSteps)
				}
			}
		})
	}
}

func TestRender(t *testing.T) {
	for _, name := range classicNames() {
		t.Run(name, func(t *testing.T) {
			e := mustMake(t, name, nil)
			_, _ = e.Reset(0)
			r, ok := e.(Renderer)
			if !ok {
				t.Fatalf("%s does not implement Renderer", name)
			}
			img, err := r.Render()
			if err != nil {
				t.Fatal(err)
			}
			b := img.Bounds()
			if b.Dx() < 100 || b.Dy() < 100 {
				t.Fatalf("image %v too small", b)
			}
			// Something other than the white background was drawn.
			drawn := 0
			for y := b.Min.Y; y < b.Max.Y; y += 2 {
				for x := b.Min.X; x < b.Max.X; x += 2 {
					if r, g, bl, _ := img.At(x, y).RGBA(); r != 0xffff || g != 0xffff || bl != 0xffff {
						drawn++
					}
				}
			}
			if drawn < 50 {
				t.Fatalf("only %d sampled pixels drawn", drawn)
			}
		})
	}
}

func TestCartPoleRenderFollowsCart(t *testing.T) {
	e := mustMake(t, "CartPole-v1", nil).(*CartPole)
	_, _ = e.Reset(0)
	dark := func(x int) bool {
		img, _ := e.Render()
		r, _, _, _ := img.At(x, 305).RGBA()
		return r < 0x1000
	}
	e.state = [4]float64{-1.2, 0, 0, 0} // cart centre at x = 150
	if !dark(150) || dark(450) {
		t.Fatal("cart not drawn at x=-1.2 only")
	}
	e.state = [4]float64{1.2, 0, 0, 0} // cart centre at x = 450
	if !dark(450) || dark(150) {
		t.Fatal("cart not drawn at x=1.2 only")
	}
}

func TestCartPoleThresholdIsGymnasiums(t *testing.T) {
	// Python: 12 * 2 * math.pi / 360 == 0.20943951023931953 (float64).
	if cpThetaThreshold != 0.20943951023931953 {
		t.Fatalf("theta threshold %.17g, want Gymnasium's 0.20943951023931953", cpThetaThreshold)
	}
}

// TestRandomPolicyBaselines compares the mean return of a uniformly random
// policy with the figures published for Gymnasium's environments (CartPole
// ≈ 22, Pendulum ≈ -1200, MountainCar -200, Acrobot ≈ -500) and with
// MountainCarContinuous's analytic -999·0.1·E[a²] = -33.3, with margins.
func TestRandomPolicyBaselines(t *testing.T) {
	cases := []struct {
		name   string
		lo, hi float64
	}{
		{"CartPole-v1", 18, 26},
		{"Pendulum-v1", -1400, -1050},
		{"MountainCar-v0", -200, -200},
		{"MountainCarContinuous-v0", -35, -31.5},
		{"Acrobot-v1", -500, -485},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustMake(t, tc.name, nil)
			rng := rand.New(rand.NewPCG(1, 2))
			const episodes = 200
			sum := 0.0
			for ep := int64(0); ep < episodes; ep++ {
				if _, err := e.Reset(ep); err != nil {
					t.Fatal(err)
				}
				for {
					s := mustStep(t, e, e.ActionSpace().Sample(rng)...)
					sum += s.Reward
					if s.Done() {
						break
					}
				}
			}
			if mean := sum / episodes; mean < tc.lo || mean > tc.hi {
				t.Fatalf("random policy mean return %.1f, want within [%v, %v]", mean, tc.lo, tc.hi)
			}
		})
	}
}
