package task

import "os"

// Direct actor calls (runtime/worker/direct.go): an actor's worker calls
// another actor over a connection of its own to the callee's worker,
// instead of through the driver. These messages find the callee; the calls
// and their results then travel as MsgExec and MsgResult on the direct
// connection. They are numbered apart from the main list, like MsgHold.
const (
	// MsgActorAddr (W→D: request number, actor ID) asks where the actor
	// takes direct calls.
	MsgActorAddr byte = 90
	// MsgActorAddrReply (D→W: request number, address) answers it once the
	// actor is constructed: a Unix socket path, "tcp:HOST:PORT" (dialled
	// with the cluster token), or "": call it through the driver (it may be
	// restarted, it is dead, or its worker cannot be reached from the
	// caller's node).
	MsgActorAddrReply byte = 91
	// MsgDirectListen (D→W) asks an actor's worker to take direct calls.
	MsgDirectListen byte = 92
	// MsgDirectAddr (W→D: address) is the answer: where it listens ("" if
	// it could not listen).
	MsgDirectAddr byte = 93
	// MsgDirectReadsDone (W→D) says a direct call that read objects through
	// the driver (MsgGet) has ended: the driver unpins them, as it does
	// when a call it sent returns its result.
	MsgDirectReadsDone byte = 94
)

// EnvDirectHost, in the environment of a cluster driver's workers on its
// own machine, is the host other nodes reach that machine by: such a
// worker asked to take direct calls listens on TCP there too, beside its
// Unix socket, so callers on other nodes reach it in one hop.
const EnvDirectHost = "GRAY_DIRECT_HOST"

// EnvDirect, set to "0" in a driver's environment, stops its actors
// calling other actors directly (on by default; the driver passes it on to
// its workers on other nodes).
const EnvDirect = "GRAY_DIRECT_CALLS"

// DirectOn reports whether direct actor calls are on in this process:
// unless EnvDirect is "0".
func DirectOn() bool { return os.Getenv(EnvDirect) != "0" }

// MsgPromise (W→D: PromiseOn, PromiseOff or PromisePublished, object ID)
// says the worker owns result id of a direct call or lease task that has
// not arrived yet, and will put it (PromiseOn), so a reference to it may
// leave the worker before it does; or that it will not after all
// (PromiseOff: the call went through the driver, which stores the result
// itself). If the worker dies first, the driver stores an error as the
// object for whoever waits for it. PromisePublished follows the put of a
// result whose values hold references: the callee's MsgContain for it,
// sent on another connection, may come after it (runtime/direct,
// contains.go).
const MsgPromise byte = 100

// The first byte of MsgPromise.
const (
	PromiseOff byte = iota
	PromiseOn
	PromisePublished
)

// Release's drain (runtime/direct, drain.go; runtime/worker,
// direct_drain.go): the driver released an actor that direct callers
// were given the address of.
const (
	// MsgDirectDrain (D→W, then callee→caller on each direct connection)
	// asks the released actor's worker to let the direct calls on the
	// wire run and then exit; the worker passes it on to its callers.
	MsgDirectDrain byte = 101
	// MsgDirectDrained (caller→callee) answers it: no call follows on
	// this connection (later ones go through the driver, which fails them
	// as calls to a released actor). The caller closes the connection
	// once the calls it sent have their results.
	MsgDirectDrained byte = 102
	// MsgDirectDialed (W→D: actor ID) says the worker, given the actor's
	// address, has dialled it: connected (the callee registered the
	// connection, so a drain reaches it there) or failed (its calls go
	// through the driver). A drain waits for it from every caller given
	// the address that lives.
	MsgDirectDialed byte = 103
)
