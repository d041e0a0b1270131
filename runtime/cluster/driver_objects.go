package cluster

import (
	"github.com/gray-ml/gray/runtime/objects"
	"github.com/gray-ml/gray/runtime/sched"
)

// The driver's side of objects on other nodes (objects.RemoteObjects): where
// to pull a node's objects from, and telling a node which were freed.

var _ objects.RemoteObjects = (*Driver)(nil) // runtime/driver passes it as DriverNode.Objects

// ObjectAddr returns the transfer address of node k's object store ("" if
// the node left the job).
func (d *Driver) ObjectAddr(k sched.NodeID) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l := d.leases[k]; l != nil {
		return l.objAddr
	}
	return ""
}

// ReleaseObjects tells node k that the objects (hex IDs) were freed, so it
// drops its copies.
func (d *Driver) ReleaseObjects(k sched.NodeID, hexIDs []string) {
	d.mu.Lock()
	l := d.leases[k]
	d.mu.Unlock()
	if l == nil {
		return
	}
	_ = l.conn.Send(msgRelease, func(b []byte) []byte { return appendStrings(b, hexIDs) })
}
