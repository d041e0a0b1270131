package gray

import "time"

// ClusterObjects counts how a cluster driver's objects moved between
// nodes (see ClusterObjectStats).
type ClusterObjects struct {
	// Served is how many bytes of objects the driver's transfer server
	// sent to workers on other nodes; Pulled, how many bytes the driver
	// pulled from other nodes for its Gets.
	Served, Pulled int64
	// Remote is how many objects live on other nodes only now.
	Remote int
	// Lost counts objects lost with their node; Rebuilt, those of them
	// made again from lineage, the last one at LastRebuilt.
	Lost, Rebuilt int
	LastRebuilt   time.Time
	// Retried counts tasks run again because their worker could not pull
	// an argument from the node that held it.
	Retried int
}

// ClusterObjectStats returns how the driver's objects moved between the
// nodes of its cluster; zero without a cluster, and in a worker.
func ClusterObjectStats() ClusterObjects {
	s := current.Load()
	if s == nil || s.insp == nil {
		return ClusterObjects{}
	}
	st := s.insp.ObjectStats()
	return ClusterObjects{Served: st.Served, Pulled: st.Pulled, Remote: st.Remote, Lost: st.Lost,
		Rebuilt: st.Rebuilt, LastRebuilt: st.LastRebuilt, Retried: st.Retried}
}
