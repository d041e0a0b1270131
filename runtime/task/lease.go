package task

import (
	"os"

	"github.com/gray-ml/gray/runtime/wire"
)

// Leases for nested tasks (runtime/worker/lease.go, runtime/direct):
// a worker that submits function tasks asks the driver once for a lease on
// an idle worker with the resources they need, then sends them to it as
// MsgExec over a connection of its own (the direct calls' transport) and
// gets their MsgResult back there. A leased worker whose running task
// blocks in Get or Wait hands the tasks queued behind it back to their
// owner with MsgGiveBack on that connection; the owner sends them through
// the driver.
const (
	// MsgLease (W→D: request number, resources) asks for a lease.
	MsgLease byte = 95
	// MsgLeaseReply (D→W: request number, lease number, address) answers
	// it: the leased worker's address (a Unix socket path or
	// "tcp:HOST:PORT"), or "": no lease now, send through the driver.
	MsgLeaseReply byte = 96
	// MsgLeaseReturn (W→D: lease number) gives a lease back.
	MsgLeaseReturn byte = 97
	// MsgOwnerBlocked (W→D) says the running task waits in this process
	// for results of its leases: the driver lends its CPUs, as for a Get
	// it answers (Ray's workers tell their raylet the same).
	MsgOwnerBlocked byte = 98
	// MsgOwnerUnblocked (W→D) says that wait is over: the task takes its
	// CPUs back.
	MsgOwnerUnblocked byte = 99
)

// EnvLeases, set to "0" in a driver's environment, stops its workers
// leasing workers for the function tasks they submit (on by default; the
// driver passes it on to its workers on other nodes).
const EnvLeases = "GRAY_LEASES"

// LeasesOn reports whether leases are on in this process: unless
// EnvLeases is "0".
func LeasesOn() bool { return os.Getenv(EnvLeases) != "0" }

// AppendResources encodes r for MsgLease.
func AppendResources(b []byte, r *Resources) []byte { return appendRes(b, r) }

// DecodeResources decodes what AppendResources wrote (nil: none).
func DecodeResources(d *wire.Dec) *Resources { return decodeRes(d) }
