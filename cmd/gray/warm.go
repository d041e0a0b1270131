package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gray-ml/gray"
)

// poolStartLimit bounds the wait for the session's pool workers to start.
const poolStartLimit = 2 * time.Minute

// waitPool waits until every pool worker the session started has
// connected, so that no row measures the processes' start: with the CPU
// time per call counted over the driver and every worker, sixteen workers
// still starting on a small machine added their start-up (a few tens of
// ms of CPU each) to the first row's calls at --cpus 16 and none at
// --cpus 2.
func waitPool(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, poolStartLimit)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		s, err := gray.Snapshot()
		if errors.Is(err, gray.ErrNoInspection) {
			return nil // no scheduler of its own: nothing to wait for
		}
		if err != nil {
			return err
		}
		if s.Starting == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the session's %d starting workers to connect: %w", s.Starting, ctx.Err())
		case <-tick.C:
		}
	}
}
