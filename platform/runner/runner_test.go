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

func (*cfg) Validate() error { return nil }

// TestConfigMap checks the config's record: decoded keys over the
// defaults, integers as integers, nested keys kept.
func TestConfigMap(t *testing.T) {
	def := cfg{LR: 0.1, Batch: 4000}
	def.Model.Act = "tanh"
	alg := rllib.Define("X", func() cfg { return def }, func(context.Context, rllib.Options, cfg) (rllib.Agent, error) { return nil, nil })
	decoded, err := alg.Decode(map[string]any{"lr": 0.5, "model": map[string]any{"fcnet_activation": "relu"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ConfigMap(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if got["lr"] != 0.5 || got["train_batch_size"] != int64(4000) || got["model"].(map[string]any)["fcnet_activation"] != "relu" {
		t.Errorf("ConfigMap = %#v", got)
	}
	if def.LR != 0.1 {
		t.Error("defaults modified")
	}
	if _, err := alg.Decode(map[string]any{"train_batch_size": 1.5}); err == nil ||
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
