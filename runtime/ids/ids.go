// Package ids defines the identifiers of tasks, objects and actors.
//
// A task ID is 16 bytes. A child task's ID is derived from its parent's ID and
// the child's index among the parent's submissions, so a program run with the
// same seed produces the same IDs run after run (Ray 0.2's object_id_seed),
// and the derivation needs no coordination between processes: a worker can
// name the tasks and objects it creates without asking the driver. An object
// ID is the ID of the task that creates it plus a 4-byte index: return values
// count up from 0, values put by the task count up from 1<<31.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
)

// TaskID names one task, actor creation or actor method call.
type TaskID [16]byte

// ActorID names an actor: the ID of the task that created it.
type ActorID = TaskID

// ObjectID names one immutable object.
type ObjectID [20]byte

// putBase is the first index used for objects put by a task.
const putBase = 1 << 31

// String returns the ID as hex.
func (t TaskID) String() string { return hex.EncodeToString(t[:]) }

// IsZero reports whether t is the zero ID.
func (t TaskID) IsZero() bool { return t == TaskID{} }

// String returns the ID as hex.
func (o ObjectID) String() string { return hex.EncodeToString(o[:]) }

// IsZero reports whether o is the zero ID.
func (o ObjectID) IsZero() bool { return o == ObjectID{} }

// Task returns the ID of the task that created the object.
func (o ObjectID) Task() TaskID {
	var t TaskID
	copy(t[:], o[:16])
	return t
}

// Index returns the object's index within its task.
func (o ObjectID) Index() uint32 { return binary.LittleEndian.Uint32(o[16:]) }

// Root returns the ID of a driver's root task. With seeded set, the ID
// depends only on seed; otherwise it is random.
func Root(seed int64, seeded bool) TaskID {
	var t TaskID
	if !seeded {
		_, _ = rand.Read(t[:])
		return t
	}
	binary.LittleEndian.PutUint64(t[:8], mix(uint64(seed)^0x6a09e667f3bcc908))
	binary.LittleEndian.PutUint64(t[8:], mix(uint64(seed)+0xbb67ae8584caa73b))
	return t
}

// Child returns the ID of the n-th task submitted by the task parent.
func Child(parent TaskID, n uint64) TaskID {
	a := binary.LittleEndian.Uint64(parent[:8])
	b := binary.LittleEndian.Uint64(parent[8:])
	var t TaskID
	binary.LittleEndian.PutUint64(t[:8], mix(a^mix(n+0x9e3779b97f4a7c15)))
	binary.LittleEndian.PutUint64(t[8:], mix(b+mix(n^0x3c6ef372fe94f82b)+a))
	return t
}

// Return returns the ID of the i-th return value of task t.
func Return(t TaskID, i int) ObjectID {
	var o ObjectID
	copy(o[:16], t[:])
	binary.LittleEndian.PutUint32(o[16:], uint32(i))
	return o
}

// Put returns the ID of the n-th object put by task t.
func Put(t TaskID, n uint64) ObjectID {
	var o ObjectID
	copy(o[:16], t[:])
	binary.LittleEndian.PutUint32(o[16:], uint32(putBase+n))
	return o
}

// mix is the splitmix64 finaliser: cheap, and a bijection, so distinct
// inputs never collide within one 64-bit half.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
