package models

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gray-ml/gray/spaces"
)

// closingDist is a custom distribution that records its Close, as a
// distribution plugin's adapter closes its process.
type closingDist struct {
	Categorical
	closed bool
}

func (c *closingDist) Close() error { c.closed = true; return nil }

func TestCustomActionDistResolver(t *testing.T) {
	var gotName string
	var gotOptions map[string]any
	var made []*closingDist
	RegisterDistResolver("disttest:", func(name string, space spaces.Space, options map[string]any) (ActionDist, error) {
		gotName, gotOptions = name, options
		n := space.(spaces.Discrete).N
		switch name {
		case "disttest:broken":
			return nil, errors.New("cannot start")
		case "disttest:gaussian": // actions of the wrong size for Discrete
			return DiagGaussian{K: 2}, nil
		}
		d := &closingDist{Categorical: Categorical{N: n}}
		made = append(made, d)
		return d, nil
	})
	opts := DefaultModelOptions()
	if err := json.Unmarshal([]byte(`{"custom_action_dist": "disttest:cat", "custom_action_dist_options": {"temperature": 2}}`), &opts); err != nil {
		t.Fatal(err)
	}
	space := spaces.Discrete{N: 4}
	d, err := NewActionDist(space, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d != ActionDist(made[0]) || gotName != "disttest:cat" || gotOptions["temperature"] != 2.0 {
		t.Fatalf("NewActionDist gave %T; resolver called with %q, %v", d, gotName, gotOptions)
	}
	if err := CloseActionDist(d); err != nil || !made[0].closed {
		t.Errorf("CloseActionDist: %v, closed %v", err, made[0].closed)
	}

	// NewPolicy sizes the model for the custom distribution.
	pol, err := NewPolicy("", spaces.NewBox(-1, 1, 3), space, "", opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pol.Dist != ActionDist(made[1]) || pol.Model.NumOutputs() != 4 {
		t.Errorf("NewPolicy: dist %T, %d model outputs", pol.Dist, pol.Model.NumOutputs())
	}
	if _, err := NewPolicy("", spaces.NewBox(-1, 1, 3), space, DistCategorical, opts, 1); err == nil || !strings.Contains(err.Error(), "both given") {
		t.Errorf("custom_action_dist with a distribution type: %v", err)
	}

	for _, tc := range []struct{ name, want string }{
		{"disttest:broken", "cannot start"},
		{"disttest:gaussian", "needs actions of 1 values"},
		{"nosuchprefix:x", "unknown prefix"},
	} {
		_, err := NewActionDist(space, ModelOptions{CustomActionDist: tc.name})
		if err == nil || !strings.Contains(err.Error(), "custom_action_dist") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming custom_action_dist and %q", tc.name, err, tc.want)
		}
	}
	// Without a custom name, the catalog's default.
	if d, err := NewActionDist(spaces.NewBox(-1, 1, 2), ModelOptions{}); err != nil || d.Name() != "DiagGaussian" {
		t.Errorf("default: %v, %v", d, err)
	}
}
