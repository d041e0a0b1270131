package plugins

import (
	"context"
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func buildModelPlugin(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "mlp")
	if b, err := exec.Command("go", "build", "-o", out, "./examples/model").CombinedOutput(); err != nil {
		t.Fatalf("building the model plugin: %v\n%s", err, b)
	}
	return out
}

// TestModelPluginGradients checks the model plugin's Backward against
// finite differences of its Forward, through the plugin boundary, and the
// errors for bad sizes, bad config and a plugin of the wrong kind.
func TestModelPluginGradients(t *testing.T) {
	path := buildModelPlugin(t)
	ctx := context.Background()
	m, err := NewModel(ctx, path, map[string]any{"hidden": 8}, 3, 2, 1, quiet(t, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.NumWeights() != 8*3+8+2*8+2 {
		t.Fatalf("%d weights, want %d", m.NumWeights(), 8*3+8+2*8+2)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const batch = 5
	x := make([]float64, batch*3)
	gy := make([]float64, batch*2)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for i := range gy {
		gy[i] = rng.NormFloat64()
	}
	loss := func() float64 {
		y, err := m.Forward(batch, x)
		if err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for i := range y {
			s += y[i] * gy[i]
		}
		return s
	}
	gw, gx, err := m.Backward(batch, x, gy)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Weights()
	if err != nil {
		t.Fatal(err)
	}
	const eps = 1e-6
	for _, i := range []int{0, 5, 30, len(w) - 1} {
		w2 := append([]float64(nil), w...)
		w2[i] += eps
		if err := m.SetWeights(w2); err != nil {
			t.Fatal(err)
		}
		up := loss()
		w2[i] -= 2 * eps
		_ = m.SetWeights(w2)
		down := loss()
		if fd := (up - down) / (2 * eps); math.Abs(fd-gw[i]) > 1e-5*(1+math.Abs(fd)) {
			t.Errorf("d loss/d w[%d] = %g by Backward, %g by finite differences", i, gw[i], fd)
		}
	}
	_ = m.SetWeights(w)
	x0 := x[0]
	x[0] = x0 + eps
	up := loss()
	x[0] = x0 - eps
	down := loss()
	x[0] = x0
	if fd := (up - down) / (2 * eps); math.Abs(fd-gx[0]) > 1e-5*(1+math.Abs(fd)) {
		t.Errorf("d loss/d x[0] = %g by Backward, %g by finite differences", gx[0], fd)
	}

	if err := m.SetWeights([]float64{1}); err == nil || !strings.Contains(err.Error(), "has 50") {
		t.Errorf("wrong number of weights: %v, want an error", err)
	}
	if _, err := m.Forward(2, x); err == nil || !strings.Contains(err.Error(), "needs 6 values") {
		t.Errorf("wrong batch size: %v, want an error", err)
	}
	if _, err := NewModel(ctx, path, map[string]any{"layers": 3}, 3, 2, 1, quiet(t, Options{})); err == nil ||
		!strings.Contains(err.Error(), "layers") {
		t.Errorf("bad model config: %v, want an error naming the key", err)
	}
	if _, err := NewModel(ctx, gridworldBin, nil, 3, 2, 1, quiet(t, Options{})); err == nil ||
		!strings.Contains(err.Error(), `"model" plugin is needed`) {
		t.Errorf("an env plugin as a model: %v, want a wrong-kind error", err)
	}
}
