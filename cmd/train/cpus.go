package main

import (
	"fmt"

	"github.com/gray-ml/gray/rllib"
)

// ownRuntimeCPUs returns the num_cpus of the runtime train starts on this
// machine (not a cluster's: there the nodes say what they offer) and a
// note to print, empty when there is nothing to say. numCPUs given
// (--num-cpus, num_cpus) is kept as given, checks and all. Left out (0),
// the runtime takes every logical CPU, or, when the run's num_workers is
// more than that, num_workers + 1 (one CPU per rollout worker and one for
// the learner or the trial). cfg is the run's config as decoded once
// (runner.Options.StartRuntime): with --restore and for rollout it holds
// the checkpoint's keys, so a shipped config whose num_workers was raised
// for a bigger machine trains here, its workers taking turns on the cores,
// and its checkpoints restore and roll out here too, rather than stopping
// with an error about CPUs. Up to maxOversubscribe times the machine's
// CPUs only: beyond that (a slip such as num_workers: 1000) the agent's
// own check refuses, naming --num-cpus, rather than this starting more
// worker processes than the machine's memory may hold. A sweep's cfg
// holds the keys its trials share; a num_workers under search is left to
// tune's own check.
func ownRuntimeCPUs(numCPUs int, cfg rllib.Config, machine int) (int, string) {
	if numCPUs != 0 {
		return numCPUs, ""
	}
	c, ok := cfg.(workersConfig)
	if !ok {
		return 0, "" // none, or a plugin's: its keys are its own
	}
	workers := c.Workers()
	if workers <= machine || workers+1 > maxOversubscribe*machine {
		return 0, ""
	}
	need := workers + 1
	return need, fmt.Sprintf("train: num_workers %d needs %d CPUs (one per worker, one for the learner) and this machine has %d: the runtime offers %d, so they take turns on its cores (--num-cpus sizes it yourself)",
		workers, need, machine, need)
}

// workersConfig is a config with num_workers: every Go algorithm's
// (rllib.Common).
type workersConfig interface{ Workers() int }

// maxOversubscribe bounds how many times its logical CPUs ownRuntimeCPUs
// offers on one machine: enough for num_workers 14 on a single core.
const maxOversubscribe = 16
