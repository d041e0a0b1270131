// Package cluster runs Gray on several machines: the node daemon
// (ServeNode), which starts workers for drivers, and the driver's side
// (Driver), which leases workers on the nodes of a cluster for its node's
// scheduler (runtime/node, runtime/sched's Cluster).
//
// A driver dials each node daemon it uses (transfer.Dial: both prove they
// hold the cluster token) and keeps that connection, the lease, for the
// job's life:
//
//	driver → node  hello    job, GOOS/GOARCH, the executable's sha256 and size, the resources wanted,
//	                        where to pull the executable from (exe.go) if the node's cache lacks it
//	node → driver  welcome  ok or why not, the resources granted and their GPU indices, the node's ID
//	driver → node  start    start worker W: arguments, environment
//	driver → node  stop     kill worker W
//	node → driver  exited   worker W ended (or did not start), and why
//	driver → node  release  the driver freed these objects (hex IDs): drop the node's copies
//	driver → node  want     the last grant seen, what the driver would like to hold
//	driver → node  return   resources the driver gives back (idle, or asked for), their GPU indices
//	node → driver  grant    resources added to the grant (numbered), their GPU indices
//	node → driver  reclaim  resources to give back as running tasks end
//
// Every other node also holds a connection to the head that starts with
// "watch" instead of a hello (headwatch.go): the head welcomes it and
// keeps it open, so that its end tells the node at once that the head's
// process died.
//
// The welcome grants what the node has free, up to what the hello asks;
// from then on the grant follows demand (grant.go): the driver asks for
// more when its queued work could use it, gives back what it held idle,
// and the node divides itself fairly among the drivers that want it. The
// driver's scheduler places tasks within its grant. A hello whose executable sum is all zeros (size
// 0) is a resources-only lease, taken by a driver on the node's own
// machine for the workers it starts itself (Driver.LeaseLocal): the grant
// counts, and the node starts no workers for it. When the lease's connection ends (the driver
// exited or its machine died) the node kills the job's workers; when a
// worker ends, the driver hears it from the node.
package cluster

import (
	"maps"
	"slices"

	"github.com/gray-ml/gray/runtime/task"
	"github.com/gray-ml/gray/runtime/wire"
)

// The lease's messages (see the package comment).
const (
	msgHello byte = 1 + iota
	_             // was needExe: the executable is pulled now (exe.go)
	_             // was exe
	msgWelcome
	msgStart
	msgStop
	msgExited
	msgRelease
	msgWant    // driver → node: seq of the last grant applied, the resources it would like to hold
	msgReturn  // driver → node: resources it gives back, their GPU indices
	msgGrant   // node → driver: seq, resources added to its grant, their GPU indices
	msgReclaim // node → driver: resources to give back as its tasks end
	// msgWatch, a node's first message to the head instead of a hello,
	// asks for nothing: the head welcomes it and holds the connection
	// open, whose end tells the node at once that the head's process
	// died (headwatch.go).
	msgWatch
)

func appendRes(b []byte, r task.Resources) []byte {
	b = wire.AppendFloat(b, r.CPU)
	b = wire.AppendFloat(b, r.GPU)
	keys := slices.Sorted(maps.Keys(r.Custom))
	b = wire.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = wire.AppendString(b, k)
		b = wire.AppendFloat(b, r.Custom[k])
	}
	return b
}

func decodeRes(d *wire.Dec) task.Resources {
	r := task.Resources{CPU: d.Float(), GPU: d.Float(), Custom: map[string]float64{}}
	for range d.Count() {
		k := d.String()
		r.Custom[k] = d.Float()
	}
	return r
}

// appendInts appends GPU indices.
func appendInts(b []byte, is []int) []byte {
	b = wire.AppendUvarint(b, uint64(len(is)))
	for _, i := range is {
		b = wire.AppendUvarint(b, uint64(i))
	}
	return b
}

func decodeInts(d *wire.Dec) []int {
	n := d.Count()
	out := make([]int, 0, n)
	for range n {
		out = append(out, int(d.Uvarint()))
	}
	return out
}

func appendStrings(b []byte, ss []string) []byte {
	b = wire.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = wire.AppendString(b, s)
	}
	return b
}

func decodeStrings(d *wire.Dec) []string {
	n := d.Count()
	out := make([]string, 0, n)
	for range n {
		out = append(out, d.String())
	}
	return out
}

// grant returns what of want fits in free (per resource, the smaller).
func grant(want, free task.Resources) task.Resources {
	g := task.Resources{CPU: min(want.CPU, free.CPU), GPU: min(want.GPU, free.GPU), Custom: map[string]float64{}}
	for k, v := range want.Custom {
		if f := free.Custom[k]; f > 0 {
			g.Custom[k] = min(v, f)
		}
	}
	g.CPU, g.GPU = max(g.CPU, 0), max(g.GPU, 0)
	return g
}
