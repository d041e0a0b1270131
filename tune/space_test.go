package tune

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func sampleMany(t *testing.T, d Domain, n int) []float64 {
	t.Helper()
	g, err := NewBasicVariantGenerator(map[string]any{"x": d}, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, 0, n)
	for {
		cfg, err := g.Suggest("")
		if errors.Is(err, ErrSearchDone) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		f, ok := toFloat(cfg["x"])
		if !ok {
			t.Fatalf("%T is not a number", cfg["x"])
		}
		out = append(out, f)
	}
}

func moments(xs []float64) (mean, sd, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		mean += x
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs))), lo, hi
}

func TestDomainSampling(t *testing.T) {
	const n = 20000
	cases := []struct {
		name             string
		d                Domain
		mean, sd, lo, hi float64
	}{
		{"uniform", Uniform{2, 4}, 3, 2 / math.Sqrt(12), 2, 4},
		{"loguniform", LogUniform{1e-4, 1e-1}, (1e-1 - 1e-4) / math.Log(1e3), -1, 1e-4, 1e-1},
		{"quniform", QUniform{0, 1, 0.25}, 0.5, -1, 0, 1},
		{"randint", RandInt{1, 100}, 50, -1, 1, 99},
		{"normal", Normal{5, 2}, 5, 2, math.Inf(-1), math.Inf(1)},
		{"qnormal", QNormal{5, 2, 1}, 5, -1, math.Inf(-1), math.Inf(1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			xs := sampleMany(t, c.d, n)
			mean, sd, lo, hi := moments(xs)
			if lo < c.lo || hi > c.hi {
				t.Errorf("samples in [%g, %g], want inside [%g, %g]", lo, hi, c.lo, c.hi)
			}
			scale := c.sd
			if scale < 0 {
				scale = sd
			}
			if math.Abs(mean-c.mean) > 5*scale/math.Sqrt(n) {
				t.Errorf("mean %g, want %g", mean, c.mean)
			}
			if c.sd > 0 && math.Abs(sd-c.sd) > 0.05*c.sd {
				t.Errorf("sd %g, want %g", sd, c.sd)
			}
		})
	}
	// Quantised values are multiples of q; randint values are ints.
	for _, x := range sampleMany(t, QUniform{0, 1, 0.25}, 200) {
		if math.Abs(x*4-math.Round(x*4)) > 1e-9 {
			t.Fatalf("quniform value %g is not a multiple of 0.25", x)
		}
	}
	counts := map[any]int{}
	g, _ := NewBasicVariantGenerator(map[string]any{"c": Choice{[]any{"a", "b", "c"}}}, 3000, 2)
	for i := 0; i < 3000; i++ {
		cfg, _ := g.Suggest("")
		counts[cfg["c"]]++
	}
	for _, k := range []string{"a", "b", "c"} {
		if counts[k] < 850 || counts[k] > 1150 {
			t.Errorf("choice %q drawn %d times of 3000, want about 1000", k, counts[k])
		}
	}
}

func TestGridSearchCartesianProductTimesSamples(t *testing.T) {
	space := map[string]any{
		"lr":    Grid(0.1, 0.01, 0.001),
		"model": map[string]any{"hidden": []any{Grid(32, 64), 8}},
		"seed":  RandInt{0, 1000},
	}
	g, err := NewBasicVariantGenerator(space, 2, 7)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	n := 0
	for {
		cfg, err := g.Suggest("")
		if errors.Is(err, ErrSearchDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		h := cfg["model"].(map[string]any)["hidden"].([]any)
		if h[1] != 8 {
			t.Fatalf("fixed list element changed: %v", h)
		}
		key := show([]any{cfg["lr"], h[0]})
		seen[key]++
		if s := cfg["seed"].(int); s < 0 || s >= 1000 {
			t.Fatalf("seed %d out of range", s)
		}
	}
	if n != 12 || len(seen) != 6 {
		t.Fatalf("got %d variants over %d grid points, want 12 over 6", n, len(seen))
	}
	for k, c := range seen {
		if c != 2 {
			t.Errorf("grid point %s appeared %d times, want 2", k, c)
		}
	}
	// The space itself is never modified.
	if _, ok := space["lr"].(GridSearch); !ok {
		t.Fatal("space modified")
	}
}

func TestParseSpaceFromYAMLForms(t *testing.T) {
	var raw map[string]any
	src := `{"lr": {"loguniform": [1e-5, 1e-2]}, "bs": {"grid_search": [64, 128]},
	  "opt": {"inner": [{"choice": ["adam", "sgd"]}, {"quniform": [0, 1, 0.5]}]},
	  "n": {"randint": [1, 5]}, "w": {"normal": [0, 1]}, "u": {"uniform": [0, 1]},
	  "lr2": {"sample_from": "config.lr * 2"}, "half": {"sample_from": "int(config.bs / 2)"}}`
	if err := json.Unmarshal([]byte(src), &raw); err != nil {
		t.Fatal(err)
	}
	space, err := ParseSpace(raw)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewBasicVariantGenerator(space, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if g.Total() != 6 {
		t.Fatalf("total %d, want 6", g.Total())
	}
	cfg, err := g.Suggest("")
	if err != nil {
		t.Fatal(err)
	}
	lr, lr2 := cfg["lr"].(float64), cfg["lr2"].(float64)
	if math.Abs(lr2-2*lr) > 1e-15 {
		t.Fatalf("lr2 = %g, want 2*lr = %g", lr2, 2*lr)
	}
	if cfg["half"] != int(cfg["bs"].(float64)/2) {
		t.Fatalf("half = %v for bs %v", cfg["half"], cfg["bs"])
	}
	// Fingerprints are stable and reflect the space.
	f1, _ := SpaceFingerprint(space)
	space2, _ := ParseSpace(raw)
	f2, _ := SpaceFingerprint(space2)
	if f1 != f2 || !strings.Contains(f1, `"loguniform":[0.00001,0.01]`) {
		t.Fatalf("fingerprint %s vs %s", f1, f2)
	}
}

func TestSampleFromGoFuncAndChains(t *testing.T) {
	space := map[string]any{
		"a": Uniform{1, 2},
		"c": SampleFrom{Fn: func(s Spec) (any, error) {
			b, ok := s.Float("b")
			if !ok {
				return nil, errors.New("b not ready")
			}
			return b + 1, nil
		}},
		"b": SampleFrom{Expr: "config.a * 10"},
	}
	g, _ := NewBasicVariantGenerator(space, 1, 1)
	cfg, err := g.Suggest("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg["c"].(float64) != cfg["a"].(float64)*10+1 {
		t.Fatalf("chain wrong: %v", cfg)
	}
	cyc := map[string]any{"x": SampleFrom{Expr: "config.y"}, "y": SampleFrom{Expr: "config.x"}}
	g, _ = NewBasicVariantGenerator(cyc, 1, 1)
	if _, err := g.Suggest(""); err == nil || !strings.Contains(err.Error(), "not (yet) a resolved value") {
		t.Fatalf("cycle: got %v", err)
	}
}

func TestMalformedSpacesNameThePath(t *testing.T) {
	cases := map[string]string{
		`{"a": {"b": {"uniform": [1]}}}`:              "config.a.b: uniform takes a list of 2 numbers",
		`{"a": {"uniform": [2, 1]}}`:                  "config.a: uniform needs low < high",
		`{"a": {"loguniform": [0, 1]}}`:               "loguniform needs 0 < low",
		`{"a": [1, {"choice": []}]}`:                  "config.a[1]: choice takes a non-empty list",
		`{"a": {"randint": [1.5, 3]}}`:                "randint needs integers",
		`{"a": {"normal": [0, -1]}}`:                  "normal needs sd > 0",
		`{"a": {"quniform": [0, 1, 0]}}`:              "q > 0",
		`{"a": {"grid_search": [1], "x": 2}}`:         `config.a.grid_search: "grid_search" must be the only key`,
		`{"a": {"sample_from": "config.b ** 2"}}`:     `sample_from "config.b ** 2"`,
		`{"a": {"sample_from": "foo(config.b)"}}`:     `unknown name "foo"`,
		`{"a": {"uniform": ["x", 1]}}`:                `element 0 is "x"`,
		`{"a": {"sample_from": ["config.b"]}}`:        "sample_from takes an expression string",
		`{"deep": {"er": [{"qnormal": [0, 1, -1]}]}}`: "config.deep.er[0]: qnormal needs",
		`{"lr": {"logunifrom": [1e-5, 1e-3]}}`:        `config.lr: unknown search space type "logunifrom" (did you mean "loguniform"?)`,
		`{"a": {"gridsearch": [1, 2]}}`:               `did you mean "grid_search"?`,
	}
	for src, want := range cases {
		var raw map[string]any
		if err := json.Unmarshal([]byte(src), &raw); err != nil {
			t.Fatal(err)
		}
		_, err := ParseSpace(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", src, err, want)
		}
	}
}

func TestTPEBeatsRandomOnQuadratic(t *testing.T) {
	// Minimise (x-0.3)^2 + (log10(lr)+3)^2 plus a categorical term.
	space := map[string]any{
		"x":   Uniform{-2, 2},
		"lr":  LogUniform{1e-6, 1},
		"opt": Choice{[]any{"a", "b", "c", "d"}},
		"dbl": SampleFrom{Expr: "config.x * 2"},
	}
	loss := func(cfg map[string]any) float64 {
		x := cfg["x"].(float64)
		l := math.Log10(cfg["lr"].(float64)) + 3
		c := 1.0
		if cfg["opt"] == "c" {
			c = 0
		}
		if cfg["dbl"].(float64) != 2*x {
			t.Fatal("sample_from not resolved after TPE")
		}
		return (x-0.3)*(x-0.3) + l*l/4 + c
	}
	run := func(s Searcher) float64 {
		best := math.Inf(1)
		for i := 0; ; i++ {
			id := trialIDString(i)
			cfg, err := s.Suggest(id)
			if errors.Is(err, ErrSearchDone) {
				return best
			}
			if err != nil {
				t.Fatal(err)
			}
			v := loss(cfg)
			best = math.Min(best, v)
			s.OnTrialComplete(id, map[string]any{"loss": v}, false)
		}
	}
	var tpeBest, rndBest float64
	for seed := int64(0); seed < 5; seed++ {
		tp, err := NewTPE(space, TPEConfig{NumSamples: 60, NStartup: 10, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if err := tp.setMetric("loss", Min); err != nil {
			t.Fatal(err)
		}
		tpeBest += run(tp)
		rnd, _ := NewBasicVariantGenerator(space, 60, seed)
		rndBest += run(rnd)
	}
	if tpeBest >= rndBest {
		t.Fatalf("TPE mean best loss %g not below random search's %g", tpeBest/5, rndBest/5)
	}
	if _, err := NewTPE(map[string]any{"g": Grid(1, 2)}, TPEConfig{}); err == nil || !strings.Contains(err.Error(), "use choice") {
		t.Fatalf("grid in TPE: %v", err)
	}
	if _, err := NewTPE(space, TPEConfig{Gamma: 1.5}); err == nil {
		t.Fatal("gamma 1.5 accepted")
	}
}

func TestConcurrencyLimiter(t *testing.T) {
	g, _ := NewBasicVariantGenerator(map[string]any{"x": Uniform{0, 1}}, 10, 1)
	c, err := NewConcurrencyLimiter(g, 2)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Suggest("a")
	b, _ := c.Suggest("b")
	x, err := c.Suggest("c")
	if a == nil || b == nil || x != nil || err != nil {
		t.Fatalf("limiter let a third trial through: %v %v", x, err)
	}
	c.OnTrialComplete("a", nil, false)
	if x, _ := c.Suggest("c"); x == nil {
		t.Fatal("no suggestion after a trial finished")
	}
}
