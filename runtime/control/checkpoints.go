package control

import (
	"sync"

	"github.com/gray-ml/gray/runtime/ids"
)

// Checkpoints keeps actors' checkpoints (gray.CheckpointInterval) where the
// node that restarts an actor finds them: on one machine in the driver's
// memory (MemCheckpoints); a cluster keeps them off the actor's node, so
// they outlive it.
type Checkpoints interface {
	// SaveCheckpoint replaces actor's checkpoint with data.
	SaveCheckpoint(actor ids.ActorID, data []byte) error
	// Checkpoint returns actor's last checkpoint; ok is false if it has none.
	Checkpoint(actor ids.ActorID) (data []byte, ok bool, err error)
	// DropCheckpoint forgets actor's checkpoint: the actor ended for good.
	DropCheckpoint(actor ids.ActorID)
}

// MemCheckpoints is the in-process Checkpoints of one machine.
type MemCheckpoints struct {
	mu sync.Mutex
	m  map[ids.ActorID][]byte
}

// NewMemCheckpoints returns an empty MemCheckpoints.
func NewMemCheckpoints() *MemCheckpoints {
	return &MemCheckpoints{m: map[ids.ActorID][]byte{}}
}

// SaveCheckpoint implements Checkpoints.
func (c *MemCheckpoints) SaveCheckpoint(actor ids.ActorID, data []byte) error {
	c.mu.Lock()
	c.m[actor] = data
	c.mu.Unlock()
	return nil
}

// Checkpoint implements Checkpoints.
func (c *MemCheckpoints) Checkpoint(actor ids.ActorID) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, ok := c.m[actor]
	return data, ok, nil
}

// DropCheckpoint implements Checkpoints.
func (c *MemCheckpoints) DropCheckpoint(actor ids.ActorID) {
	c.mu.Lock()
	delete(c.m, actor)
	c.mu.Unlock()
}
