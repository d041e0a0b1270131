package rllib

import (
	"fmt"
	"math"

	"github.com/gray-ml/gray"
)

// CheckWorkerCPUs returns an error when numWorkers worker actors of one
// CPU each need more CPUs than the gray runtime has in all: the surplus
// would wait for a CPU forever, so the agent says what to change instead
// of hanging. zeroMeans, when not empty, says what num_workers 0 does
// (for example "to sample in the driver") and is offered as another way
// out. Call it after checking gray.IsInitialized; before Init it has
// nothing to check against and returns nil. Errors start with "<alg>: ".
func CheckWorkerCPUs(alg string, numWorkers int, zeroMeans string) error {
	res := gray.ClusterResources()
	if res == nil {
		return nil
	}
	cpus := res["CPU"]
	if float64(numWorkers) <= cpus {
		return nil
	}
	msg := fmt.Sprintf("%s: num_workers=%d needs %d CPUs (each worker actor reserves one); the runtime has %g: set num_workers to at most %d or give the runtime more CPUs (--num-cpus)",
		alg, numWorkers, numWorkers, cpus, int(math.Floor(cpus)))
	if zeroMeans != "" {
		msg += ", or set num_workers to 0 " + zeroMeans
	}
	return fmt.Errorf("%s", msg)
}
