package node

import "github.com/gray-ml/gray/runtime/task"

// The rest of the contract the gray package holds its runtimes to (its
// backend interface); the other methods are in node.go, requests.go,
// submit.go and objects.API (embedded in the Node).

// Resources returns the node's capacity and what running tasks and live
// actors leave of it.
func (n *Node) Resources() (total, available task.Resources) {
	return n.Total(), n.Available()
}
