package rllib

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gray-ml/gray/models"
)

// ApplyTrainState applies a checkpoint's weights and Adam state and the
// algorithm's next step, or, when any of it fails, leaves both as they
// were: a refused checkpoint must not leave the agent half restored.
func TestApplyTrainState(t *testing.T) {
	saved := TrainState{Weights: []float64{7, 8, 9}, Adam: models.AdamState{Step: 4, M: []float64{1, 1, 1}, V: []float64{2, 2, 2}}}
	errFilter := errors.New("the filter has 2 values, this agent's has 3")
	cases := []struct {
		name    string
		st      TrainState
		then    func() error
		want    string // "" for success
		applied bool
	}{
		{"no next step", saved, nil, "", true},
		{"next step succeeds", saved, func() error { return nil }, "", true},
		{"next step fails", saved, func() error { return errFilter }, "TEST: Restore: the filter has 2 values", false},
		{"too few weights", TrainState{Weights: []float64{7, 8}}, func() error { t.Error("the next step ran after a refusal"); return nil }, "holds 2 weights, this agent's model has 3", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			params := models.NewParams()
			copy(params.New("w", 1, 3).Data, []float64{1, 2, 3})
			opt := models.NewAdam(0.1)
			if err := opt.Step(params.Flat(), []float64{1, 1, 1}); err != nil {
				t.Fatal(err)
			}
			weights, adam := params.GetFlat(nil), opt.State()
			b := Base[MapConfig]{Name: "TEST"}
			err := b.ApplyTrainState("ckpt", tc.st, params, opt, tc.then)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if tc.applied {
				weights, adam = tc.st.Weights, tc.st.Adam
			}
			if !slices.Equal(params.GetFlat(nil), weights) || !reflect.DeepEqual(opt.State(), adam) {
				t.Errorf("weights %v, Adam %+v; want %v, %+v", params.GetFlat(nil), opt.State(), weights, adam)
			}
		})
	}
}
