package tune

import (
	"fmt"
	"path/filepath"
)

// replay rebuilds trials, searcher and scheduler state from the journal.
func (r *runner) replay() error {
	r.replaying = true
	defer func() { r.replaying = false }()
	err := readJournal(r.dir, func(ev journalEvent) error {
		if ev.Event == evCreated {
			cfg, err := r.search.Suggest(ev.Trial)
			if err != nil || cfg == nil {
				return fmt.Errorf("tune: resuming: the searcher does not suggest trial %s as it did (got %v); was the search algorithm, num_samples or seed changed?", ev.Trial, err)
			}
			if show(cfg) != show(ev.Config) {
				return fmt.Errorf("tune: resuming: trial %s was created with %s but the searcher now suggests %s; the search space, algorithm or seed changed",
					ev.Trial, show(ev.Config), show(cfg))
			}
			t := r.addTrial(ev.Trial, cfg)
			if ev.Resources != nil {
				t.Resources = *ev.Resources
			}
			return nil
		}
		if ev.Event == evFlush {
			if f, ok := r.sched.(Flusher); ok {
				f.Flush(r)
			}
			return nil
		}
		if ev.Event == evEnded {
			r.ended, r.done = ev.Error, true
			return nil
		}
		t := r.byID[ev.Trial]
		if t == nil {
			return fmt.Errorf("tune: resuming: the journal mentions trial %s before creating it", ev.Trial)
		}
		switch ev.Event {
		case evResult:
			t.LastResult = ev.Result
			if it, ok := ResultFloat(ev.Result, "training_iteration"); ok {
				t.Iteration = int(it)
			}
			t.TimeTotal, _ = ResultFloat(ev.Result, "time_total_s")
			r.sawResult = true
			r.search.OnTrialResult(t.ID, ev.Result)
			if r.sched.OnTrialResult(r, t, ev.Result) == Stop {
				// Carried out after replay unless the journal ends it.
				r.Stop(t)
			}
		case evCheckpoint:
			cp := *ev.Checkpoint
			cp.Path = filepath.Join(r.dir, cp.Path)
			t.Checkpoints = append(t.Checkpoints, cp)
		case evCheckpointGone:
			t.Checkpoints = removeCheckpoint(t.Checkpoints, filepath.Join(r.dir, ev.Checkpoint.Path))
		case evConfig:
			t.Config = ev.Config
		case evStatus:
			t.Status, t.Failures, t.Error = ev.Status, ev.Failures, ev.Error
			if ev.Status.terminal() {
				r.unwait(t)
				r.sched.OnTrialComplete(r, t, t.LastResult)
				r.search.OnTrialComplete(t.ID, t.LastResult, ev.Status == Errored)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Unfinished trials continue from their last checkpoint, unless the
	// experiment had ended (they were stopping), their last result (taken
	// while being interrupted) met the stop criteria, or the scheduler
	// stopped them during replay. Those end at their last result.
	r.replaying = false
	stopped := map[*Trial]bool{}
	for _, a := range r.actions {
		if a.stop {
			stopped[a.t] = true
		}
	}
	r.actions = nil
	for _, t := range r.trials {
		if t.Status.terminal() {
			continue
		}
		if r.ended != "" || stopped[t] || (t.LastResult != nil && r.stopCriteria(t, t.LastResult)) {
			r.unwait(t)
			r.terminate(t, Terminated)
			continue
		}
		t.restoreFrom, t.Iteration, t.TimeTotal = "", 0, 0
		if cp, ok := t.LatestCheckpoint(); ok {
			t.restoreFrom, t.Iteration, t.TimeTotal = cp.Path, cp.Iteration, cp.TimeTotal
		}
		if t.Status == Running {
			r.setStatus(t, Pending)
		}
	}
	r.applyActions()
	return r.fatal
}
