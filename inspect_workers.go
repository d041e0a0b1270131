package gray

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
)

// WorkerStacks returns the goroutine dump of one of the session's worker
// processes (by its number, as Snapshot lists it): every goroutine's
// stack, taken while the worker runs, whatever it runs. Only workers on
// the driver's machine answer.
func WorkerStacks(ctx context.Context, worker int) (string, error) {
	n, err := Inspect()
	if err != nil {
		return "", err
	}
	return n.Stacks(ctx, worker)
}

// WorkerLogDir is the folder where the session's workers write their
// output (worker-N.out and worker-N.err), "" when it goes to the driver's
// output (Options.LogDir).
func WorkerLogDir() string {
	n, err := Inspect()
	if err != nil {
		return ""
	}
	return n.LogDir()
}

// KillActorID ends the actor with the given ID (hex, as Snapshot lists
// it) as Kill does; for tools that know actors by ID, such as the
// dashboard.
func KillActorID(id string) error {
	s, err := sess()
	if err != nil {
		return err
	}
	var aid ids.ActorID
	b, err := hex.DecodeString(id)
	if err != nil || len(b) != len(aid) {
		return fmt.Errorf("gray: kill: actor ID %q is not %d hex digits", id, 2*len(aid))
	}
	copy(aid[:], b)
	return s.b.Kill(aid)
}
