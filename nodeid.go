package gray

import (
	"os"

	"github.com/gray-ml/gray/runtime/cluster"
)

// NodeID is the ID of the cluster node whose worker process this is: ""
// in a driver and off a cluster.
func NodeID() string { return os.Getenv(cluster.EnvNodeID) }
