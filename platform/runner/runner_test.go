package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gray-ml/gray/rllib"
)

type cfg struct {
	LR    float64 `json:"lr"`
	Batch int     `json:"train_batch_size"`
	Model struct {
		Act string `json:"fcnet_activation"`
	} `json:"model"`
}

func TestFullConfig(t *testing.T) {
	def := cfg{LR: 0.1, Batch: 4000}
	def.Model.Act = "tanh"
	user := map[string]any{"lr": 0.5, "model": map[string]any{"fcnet_activation": "relu"}}
	for name, d := range map[string]func() any{
		"struct":  func() any { return def },
		"pointer": func() any { c := def; return &c },
		"map": func() any {
			return map[string]any{"lr": 0.1, "train_batch_size": 4000, "model": map[string]any{"fcnet_activation": "tanh"}}
		},
	} {
		got, err := FullConfig(rllib.Algorithm{Name: "X", DefaultConfig: d}, user)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got["lr"] != 0.5 || got["train_batch_size"] != int64(4000) && got["train_batch_size"] != 4000 ||
			got["model"].(map[string]any)["fcnet_activation"] != "relu" {
			t.Errorf("%s: FullConfig = %#v", name, got)
		}
	}
	// The defaults are not modified by decoding.
	if def.LR != 0.1 {
		t.Error("defaults modified")
	}
	if _, err := FullConfig(rllib.Algorithm{Name: "X", DefaultConfig: func() any { return def }}, map[string]any{"train_batch_size": 1.5}); err == nil ||
		!strings.Contains(err.Error(), `key "train_batch_size" must be an integer`) {
		t.Errorf("fractional batch size: %v", err)
	}
}

func TestSafelyNamesThePanic(t *testing.T) {
	err := safely("training iteration 3", func() error {
		var s []int
		_ = s[5]
		return nil
	})
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("safely = %v, want a PanicError", err)
	}
	msg := err.Error()
	for _, w := range []string{"panic while training iteration 3", "index out of range", "runner_test.go:", "TestSafelyNamesThePanic"} {
		if !strings.Contains(msg, w) {
			t.Errorf("%q lacks %q", msg, w)
		}
	}
	if strings.Contains(msg, "goroutine") || len(pe.PanicStack()) == 0 {
		t.Errorf("message carries the raw stack, or the stack is lost: %q", msg)
	}
	if err := safely("x", func() error { return context.Canceled }); !errors.Is(err, context.Canceled) {
		t.Errorf("errors pass through: %v", err)
	}
}
