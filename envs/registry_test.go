package envs

import (
	"strings"
	"sync"
	"testing"
)

func TestRegistryNames(t *testing.T) {
	names := strings.Join(Names(), ",")
	for _, want := range classicNames() {
		if !strings.Contains(names, want) {
			t.Fatalf("Names() = %s, missing %s", names, want)
		}
	}
}

func TestUnknownEnvListsKnown(t *testing.T) {
	_, err := Make("CartPol-v1", nil)
	if err == nil {
		t.Fatal("Make of an unknown name succeeded")
	}
	for _, want := range []string{`"CartPol-v1"`, "CartPole-v1", "Acrobot-v1", "plugin:"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not mention %s", err, want)
		}
	}
	if _, err := MakeVector("Nope", nil, 2); err == nil || !strings.Contains(err.Error(), "Pendulum-v1") {
		t.Fatalf("MakeVector of an unknown name: %v", err)
	}
}

func TestBareFamilyName(t *testing.T) {
	cases := map[string]string{
		"CartPole":              "CartPole-v1",
		"Pendulum":              "Pendulum-v1",
		"MountainCar":           "MountainCar-v0",
		"MountainCarContinuous": "MountainCarContinuous-v0",
		"Acrobot":               "Acrobot-v1",
		"CartPole-v0":           "CartPole-v0",
	}
	for name, want := range cases {
		e := mustMake(t, name, nil)
		if got := e.(Specer).Spec().Name; got != want {
			t.Fatalf("Make(%q) made %s, want %s", name, got, want)
		}
	}
}

func TestSpecs(t *testing.T) {
	cases := []struct {
		name      string
		limit     int
		threshold float64
		has       bool
	}{
		{"CartPole-v0", 200, 195, true},
		{"CartPole-v1", 500, 475, true},
		{"Pendulum-v1", 200, 0, false},
		{"MountainCar-v0", 200, -110, true},
		{"MountainCarContinuous-v0", 999, 90, true},
		{"Acrobot-v1", 500, -100, true},
	}
	for _, tc := range cases {
		s := mustMake(t, tc.name, nil).(Specer).Spec()
		if s.MaxEpisodeSteps != tc.limit || s.RewardThreshold != tc.threshold || s.HasRewardThreshold != tc.has {
			t.Fatalf("%s: spec %+v", tc.name, s)
		}
	}
}

func TestMakeWithConfig(t *testing.T) {
	t.Run("max_episode_steps", func(t *testing.T) {
		// JSON numbers arrive as float64.
		e := mustMake(t, "CartPole", Config{"max_episode_steps": float64(3)})
		_, _ = e.Reset(0)
		for i := 1; i <= 3; i++ {
			s := mustStep(t, e, float64(i%2))
			if s.Truncated != (i == 3) {
				t.Fatalf("step %d truncated=%v", i, s.Truncated)
			}
		}
		if got := e.(Specer).Spec().MaxEpisodeSteps; got != 3 {
			t.Fatalf("Spec().MaxEpisodeSteps = %d, want 3", got)
		}
	})
	t.Run("pendulum gravity", func(t *testing.T) {
		e := mustMake(t, "Pendulum-v1", Config{"g": 0}).(*Pendulum)
		_, _ = e.Reset(0)
		e.th, e.thDot = 1, 0
		if s := mustStep(t, e, 0); s.Obs[2] != 0 {
			t.Fatalf("without gravity and torque the pendulum moved: %v", s.Obs)
		}
	})
	bad := []struct {
		env  string
		cfg  Config
		want []string
	}{
		{"CartPole-v1", Config{"max_steps": 10}, []string{`unknown config key "max_steps"`, "max_episode_steps", "sutton_barto_reward"}},
		{"CartPole-v1", Config{"max_episode_steps": "ten"}, []string{`"max_episode_steps"`, "integer", "string"}},
		{"CartPole-v1", Config{"max_episode_steps": 2.5}, []string{"integer"}},
		{"CartPole-v1", Config{"max_episode_steps": 0}, []string{"at least 1"}},
		{"CartPole-v1", Config{"sutton_barto_reward": 1}, []string{"boolean"}},
		{"Pendulum-v1", Config{"g": "9.8"}, []string{`"g"`, "number"}},
		{"Acrobot-v1", Config{"g": 1}, []string{`unknown config key "g"`, "Acrobot-v1"}},
	}
	for _, tc := range bad {
		_, err := Make(tc.env, tc.cfg)
		if err == nil {
			t.Fatalf("Make(%s, %v) succeeded", tc.env, tc.cfg)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("Make(%s, %v): error %q does not mention %s", tc.env, tc.cfg, err, w)
			}
		}
	}
}

// registerCustom registers the test's environments once per process, so
// that -count=N runs do not register them twice.
var registerCustom = sync.OnceFunc(func() {
	Register("TestCustom-v3", func(cfg Config) (Env, error) { return Make("CartPole-v0", cfg) })
	Register("TestCustom-v12", func(cfg Config) (Env, error) { return Make("Acrobot-v1", cfg) })
	RegisterVector("TestBatched-v2", func(cfg Config, n int) (Vector, error) { return MakeVector("Pendulum-v1", cfg, n) })
})

func TestRegisterCustom(t *testing.T) {
	registerCustom()
	e := mustMake(t, "TestCustom", nil) // v12 beats v3 numerically
	if got := e.(Specer).Spec().Name; got != "Acrobot-v1" {
		t.Fatalf("bare name made %s, want the v12 creator's Acrobot-v1", got)
	}
	v, err := MakeVector("TestCustom-v3", nil, 2)
	if err != nil || v.NumEnvs() != 2 {
		t.Fatalf("MakeVector of a custom env: %v", err)
	}
	bv, err := MakeVector("TestBatched", nil, 3)
	if err != nil || bv.ActionSpace().String() != "Box(-2, 2, [1])" {
		t.Fatalf("bare name of a natively batched env: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a name twice did not panic")
		}
	}()
	Register("TestCustom-v3", nil)
}

// TestEnvNamesAreCaseInsensitive: environment names resolve in any case,
// as algorithm names do, and a misspelled one suggests the closest.
func TestEnvNamesAreCaseInsensitive(t *testing.T) {
	for name, want := range map[string]string{"cartpole-v1": "CartPole-v1", "CARTPOLE": "CartPole-v1", "pendulum-V1": "Pendulum-v1"} {
		e := mustMake(t, name, nil)
		if got := e.(Specer).Spec().Name; got != want {
			t.Errorf("Make(%q) made %s, want %s", name, got, want)
		}
		if err := Check(name); err != nil {
			t.Errorf("Check(%q): %v", name, err)
		}
	}
	for name, want := range map[string]string{"CartPol-v1": `did you mean "CartPole-v1"?`, "Acrobat-v1": `did you mean "Acrobot-v1"?`} {
		_, err := Make(name, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Make(%q): %v, want %q", name, err, want)
		}
		if err := Check(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q): %v, want %q", name, err, want)
		}
	}
	if err := Check("Breakout-v4"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Check of a name near nothing: %v", err)
	}
}
