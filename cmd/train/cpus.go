package main

import (
	"fmt"

	"github.com/gray-ml/gray/tune"
)

// ownRuntimeCPUs returns the num_cpus of the runtime train starts on this
// machine (not a cluster's: there the nodes say what they offer) and a
// note to print, empty when there is nothing to say. numCPUs given
// (--num-cpus, num_cpus) is kept as given, checks and all. Left out (0),
// the runtime takes every logical CPU, or, when the config's num_workers
// needs more (one CPU per rollout worker and one for the learner or the
// trial), that many: a shipped config whose num_workers was raised for a
// bigger machine then runs here too, its workers taking turns on the
// cores, rather than stopping with an error about CPUs. Up to
// maxOversubscribe times the machine's CPUs only: beyond that (a slip such
// as num_workers: 1000) the agent's own check refuses, naming --num-cpus,
// rather than this starting more worker processes than the machine's
// memory may hold. A num_workers under search (a sweep's space) is left
// to tune's own check.
func ownRuntimeCPUs(numCPUs int, config map[string]any, machine int) (int, string) {
	if numCPUs != 0 {
		return numCPUs, ""
	}
	workers, ok := tune.Int(config, "num_workers")
	if !ok || workers+1 <= machine || workers+1 > maxOversubscribe*machine {
		return 0, ""
	}
	need := workers + 1
	return need, fmt.Sprintf("train: num_workers %d needs %d CPUs (one per worker, one for the learner) and this machine has %d: the runtime offers %d, so they take turns on its cores (--num-cpus sizes it yourself)",
		workers, need, machine, need)
}

// maxOversubscribe bounds how many times its logical CPUs ownRuntimeCPUs
// offers on one machine: enough for num_workers 14 on a single core.
const maxOversubscribe = 16
