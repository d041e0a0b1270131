package models

import (
	"strings"
	"testing"
)

func TestMergeRunningStats(t *testing.T) {
	replica := func(mean, v float64) []*BatchNorm {
		bn := NewBatchNorm(NewParams(), "bn", 2)
		bn.RunMean[0], bn.RunMean[1], bn.RunVar[0], bn.RunVar[1] = mean, -mean, v, 2*v
		return []*BatchNorm{bn}
	}
	layers := [][]*BatchNorm{replica(1, 1), replica(3, 2), replica(100, 100)}
	// The third replica did not run: it only receives the merge.
	if err := MergeRunningStats(layers, []float64{0.25, 0.75}); err != nil {
		t.Fatal(err)
	}
	for r, ls := range layers {
		bn := ls[0]
		if bn.RunMean[0] != 2.5 || bn.RunMean[1] != -2.5 || bn.RunVar[0] != 1.75 || bn.RunVar[1] != 3.5 {
			t.Errorf("replica %d: mean %v var %v, want [2.5 -2.5] [1.75 3.5]", r, bn.RunMean, bn.RunVar)
		}
	}
	other := []*BatchNorm{NewBatchNorm(NewParams(), "bn", 3)}
	for _, tc := range []struct {
		layers  [][]*BatchNorm
		weights []float64
		want    string
	}{
		{layers, nil, "0 weights for 3 replicas"},
		{layers[:1], []float64{0.5, 0.5}, "2 weights for 1 replicas"},
		{[][]*BatchNorm{layers[0], nil}, []float64{1}, "replica 1 has 0 BatchNorms"},
		{[][]*BatchNorm{layers[0], other}, []float64{1}, "3 channels in replica 1"},
	} {
		if err := MergeRunningStats(tc.layers, tc.weights); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error with %q", tc.weights, err, tc.want)
		}
	}
}
