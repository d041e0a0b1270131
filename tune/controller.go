package tune

import (
	"fmt"
	"path/filepath"
)

// Controller implementation, used by schedulers.

// Checkpoint implements Controller.
func (r *runner) Checkpoint(t *Trial) (Checkpoint, error) {
	if r.replaying {
		cp, _ := t.LatestCheckpoint()
		return cp, nil
	}
	if cp, ok := t.LatestCheckpoint(); ok && cp.Iteration == t.Iteration {
		return cp, nil
	}
	if t.trainable == nil || t.busy {
		return Checkpoint{}, fmt.Errorf("tune: trial %s cannot be checkpointed now", t.ID)
	}
	dir := r.checkpointDir(t, t.Iteration)
	if err := saveTo(r.ctx, t.trainable, dir); err != nil {
		return Checkpoint{}, fmt.Errorf("tune: trial %s: %w", t.ID, err)
	}
	return r.addCheckpoint(t, dir), nil
}

// Reconfigure implements Controller.
func (r *runner) Reconfigure(t *Trial, cfg map[string]any, cp Checkpoint) {
	if r.replaying {
		return
	}
	r.actions = append(r.actions, pendingAction{t: t, cfg: cfg, cp: cp})
	t.reconfig = true
}

// Stop implements Controller. During resume replay the stop is queued
// too: the journal holds the stops the scheduler asked for before the
// interruption (the trial's terminal status follows, and the queued stop
// is then ignored), but a result taken while interrupting reaches the
// scheduler first in replay, and the stops it causes must still happen.
func (r *runner) Stop(t *Trial) {
	r.actions = append(r.actions, pendingAction{t: t, stop: true})
}

func (r *runner) applyActions() {
	for len(r.actions) > 0 {
		a := r.actions[0]
		r.actions = r.actions[1:]
		t := a.t
		if a.stop {
			switch {
			case t.Status.terminal():
			case t.busy || t.Status == Running:
				t.wantStop = true
			default:
				r.unwait(t)
				r.terminate(t, Terminated)
			}
			continue
		}
		// Exploit: copy the donor's checkpoint into t's folder (the donor
		// may delete its own), then restart t from it with the new config.
		dst := filepath.Join(t.Dir, fmt.Sprintf("checkpoint_%06d_from_%s", a.cp.Iteration, filepath.Base(filepath.Dir(a.cp.Path))))
		if err := copyDir(a.cp.Path, dst); err != nil {
			t.reconfig = false
			continue
		}
		t.Config = a.cfg
		r.record(journalEvent{Event: evConfig, Trial: t.ID, Config: a.cfg})
		t.Iteration, t.TimeTotal = a.cp.Iteration, a.cp.TimeTotal
		r.addCheckpoint(t, dst)
		t.restoreFrom = dst
		if t.logger != nil {
			// Reopen so params.json shows the new config.
			r.closeLogger(t)
			lg, err := r.exp.Logger(t.Dir, t.Config)
			if err != nil {
				r.fatal = err
				return
			}
			t.logger = lg
		}
	}
}
