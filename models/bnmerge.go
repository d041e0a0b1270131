package models

import "fmt"

// MergeRunningStats is the rule for batch normalisation's running
// statistics under data-parallel training, where each replica of a network
// normalises its own shard of the batch and so updates its own copy of the
// statistics: after each step, every replica's statistics become the mean
// of those of the replicas that ran, weighted by their shares of the batch
// (weights, summing to 1) and added in replica order, so they are the same
// for a seed and a replica count on any machine. Every replica then starts
// the next step from the same statistics.
//
// From a common start the merged running mean is the one a single replica
// would keep for the whole batch (the shards' means weighted by their
// sizes); the merged variance is the weighted mean of the shards'
// variances, which leaves out the spread between the shards' means.
//
// layers[r] are replica r's BatchNorms in the network's order (ResNet's
// BatchNorms); replicas beyond len(weights) did not run and only receive
// the result.
func MergeRunningStats(layers [][]*BatchNorm, weights []float64) error {
	if len(weights) == 0 || len(weights) > len(layers) {
		return fmt.Errorf("models: MergeRunningStats: %d weights for %d replicas; give one weight per replica that ran", len(weights), len(layers))
	}
	for r, ls := range layers[1:] {
		if len(ls) != len(layers[0]) {
			return fmt.Errorf("models: MergeRunningStats: replica %d has %d BatchNorms, replica 0 %d", r+1, len(ls), len(layers[0]))
		}
	}
	for i, bn := range layers[0] {
		for r := range layers {
			if layers[r][i].C != bn.C {
				return fmt.Errorf("models: MergeRunningStats: BatchNorm %d has %d channels in replica %d and %d in replica 0", i, layers[r][i].C, r, bn.C)
			}
		}
		for c := range bn.C {
			mean, v := 0.0, 0.0
			for r, w := range weights {
				mean += w * layers[r][i].RunMean[c]
				v += w * layers[r][i].RunVar[c]
			}
			for r := range layers {
				layers[r][i].RunMean[c], layers[r][i].RunVar[c] = mean, v
			}
		}
	}
	return nil
}
