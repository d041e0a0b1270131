package models

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gray-ml/gray/spaces"
)

// closingModel is a catalog model that records its Close, as a model
// plugin's adapter closes its process.
type closingModel struct {
	Model
	closed bool
}

func (c *closingModel) Close() error { c.closed = true; return nil }

func TestCustomModelResolver(t *testing.T) {
	type call struct {
		name    string
		shape   []int
		outputs int
		value   bool
		custom  map[string]any
	}
	var got call
	var made *closingModel
	RegisterModelResolver("customtest:", func(name string, shape []int, outputs int, opts ModelOptions, seed uint64) (Model, error) {
		got = call{name, shape, outputs, opts.Value, opts.CustomOptions}
		switch name {
		case "customtest:broken":
			return nil, errors.New("cannot start")
		case "customtest:wide":
			outputs++
		}
		m, err := NewFullyConnected(shape[0], outputs, ModelOptions{Hiddens: []int{4}, Value: opts.Value}, seed)
		if err != nil {
			return nil, err
		}
		made = &closingModel{Model: m}
		return made, nil
	})

	opts := DefaultModelOptions()
	if err := json.Unmarshal([]byte(`{"custom_model": "customtest:mlp", "custom_options": {"hidden": 8}}`), &opts); err != nil {
		t.Fatal(err)
	}
	opts.Value = true
	m, err := NewModel([]int{3}, 2, opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m != Model(made) {
		t.Fatalf("NewModel returned %T, not the resolver's model", m)
	}
	if got.name != "customtest:mlp" || len(got.shape) != 1 || got.shape[0] != 3 || got.outputs != 2 || !got.value || got.custom["hidden"] != 8.0 {
		t.Errorf("resolver called with %+v", got)
	}
	if err := CloseModel(m); err != nil || !made.closed {
		t.Errorf("CloseModel: %v, closed %v; want the model closed", err, made.closed)
	}
	plain, _ := NewFullyConnected(3, 2, DefaultModelOptions(), 1)
	if err := CloseModel(plain); err != nil {
		t.Errorf("CloseModel of a catalog model: %v", err)
	}

	// NewPolicy goes through the same hook.
	p, err := NewPolicy("", spaces.NewBox(-1, 1, 3), spaces.Discrete{N: 2}, "", opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Model != Model(made) || got.outputs != 2 {
		t.Errorf("NewPolicy built %T with %d outputs, want the custom model with 2", p.Model, got.outputs)
	}

	for _, tc := range []struct{ name, want string }{
		{"nosuchprefix:x", `custom_model "nosuchprefix:x": unknown prefix; known prefixes: `},
		{"customtest:broken", "cannot start"},
		{"customtest:wide", "has 3 outputs; 2 are needed"},
	} {
		o := opts
		o.CustomModel = tc.name
		made = nil
		_, err := NewModel([]int{3}, 2, o, 1)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("custom_model %q: got %v, want an error containing %q", tc.name, err, tc.want)
		}
		if made != nil && !made.closed {
			t.Errorf("custom_model %q: the rejected model was not closed", tc.name)
		}
	}
}
