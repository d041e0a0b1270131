package rllib

import (
	"fmt"
	"math"
	"runtime"

	"github.com/gray-ml/gray"
)

// This file holds num_learner_threads, the key every algorithm's config
// shares for the number of goroutines its training step splits its work
// over (data-parallel shards of each minibatch, their gradients summed in
// a fixed order). A config holds it as a *int: nil (the default) means the
// CPUs the learner reserves (LearnerCPUs), and any value given must be
// between 1 and that.

// LearnerCPUs is the number of CPUs an agent's learner reserves: the gray
// runtime's CPUs less one for each of the numWorkers rollout worker actors
// the agent starts (each reserves one), and at least 1. runtimeCPUs is
// what the runtime has in all (gray.ClusterResources, or the num_cpus the
// platform is about to start it with); 0 or less means no runtime, whose
// learner reserves 1 CPU (a tune trial run as an actor also reserves 1,
// plus num_learner_threads beyond it: tune.AgentResources).
func LearnerCPUs(runtimeCPUs float64, numWorkers int) int {
	if runtimeCPUs <= 0 {
		return 1
	}
	return max(1, int(math.Floor(runtimeCPUs))-max(0, numWorkers))
}

// runtimeCPUs is what the running gray runtime has in all; 0 without one
// and inside a worker process (which does not keep the node's accounts).
func runtimeCPUs() float64 {
	if res := gray.ClusterResources(); res != nil {
		return res["CPU"]
	}
	return 0
}

// CheckLearnerThreads checks a num_learner_threads value that was given
// (set not nil) against the learner's CPUs (LearnerCPUs(runtimeCPUs,
// numWorkers)), naming the limit. Without a runtime (runtimeCPUs 0, as in
// a worker process) only the lower bound is checked: the runtime that
// placed the process reserved the CPUs. Errors start with "<alg> config: ".
func CheckLearnerThreads(alg string, set *int, numWorkers int, runtimeCPUs float64) error {
	if set == nil {
		return nil
	}
	n := *set
	if n < 1 {
		return fmt.Errorf("%s config: num_learner_threads must be at least 1, got %d (leave it out to use the CPUs the learner reserves)", alg, n)
	}
	if runtimeCPUs <= 0 {
		return nil
	}
	if limit := LearnerCPUs(runtimeCPUs, numWorkers); n > limit {
		return fmt.Errorf("%s config: num_learner_threads %d is more than the learner's %d CPUs (the runtime's %g less num_workers=%d, one each): set it to at most %d, or give the runtime more CPUs (num_cpus, --num-cpus)",
			alg, n, limit, runtimeCPUs, numWorkers, limit)
	}
	return nil
}

// LearnerThreads resolves num_learner_threads for an agent being created:
// the value given, checked against the running runtime, or when set is
// nil the CPUs the learner reserves, but no more than the Go scheduler
// runs at once (GOMAXPROCS: more goroutines than that would only take
// turns). Results are deterministic for a seed and a thread count, so a
// run that must repeat on another host sets the count explicitly.
func LearnerThreads(alg string, set *int, numWorkers int) (int, error) {
	cpus := runtimeCPUs()
	if err := CheckLearnerThreads(alg, set, numWorkers, cpus); err != nil {
		return 0, err
	}
	if set != nil {
		return *set, nil
	}
	return min(LearnerCPUs(cpus, numWorkers), runtime.GOMAXPROCS(0)), nil
}

// LearnerThreadsConfig is implemented by algorithm configs that have
// num_learner_threads, so that the platform can check it against the
// runtime it is about to start before it writes a run folder.
type LearnerThreadsConfig interface {
	// LearnerThreads returns num_learner_threads as given (nil: the
	// default) and the number of rollout worker actors, each of which
	// reserves one CPU.
	LearnerThreads() (set *int, numWorkers int)
}
