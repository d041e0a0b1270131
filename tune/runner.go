package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

type evKind int

const (
	evkResult evKind = iota
	evkStopped
	evkError
	evkDone
)

// opEvent is what a trial operation (run in its own goroutine, as an actor
// method call would be) reports back to the runner loop.
type opEvent struct {
	t         *Trial
	kind      evKind
	trainable Trainable
	result    map[string]any
	dur       float64
	ckpt      *Checkpoint
	err       error
}

type pendingAction struct {
	t    *Trial
	stop bool
	cfg  map[string]any
	cp   Checkpoint
}

type runner struct {
	exp       Experiment
	dir       string
	ctx       context.Context
	j         *journal
	trials    []*Trial
	byID      map[string]*Trial
	waiting   []*Trial // pending or paused, creation order
	inflight  int
	running   int
	used      Resources
	events    chan opEvent
	search    Searcher
	sched     Scheduler
	done      bool // searcher exhausted
	sawResult bool
	actions   []pendingAction
	replaying bool
	fatal     error
	startWall time.Time
	spent     bool   // the time budget ran out: start nothing, end when idle
	ended     string // why StopExperiment ended the experiment, if it did
	actors    bool   // trials run in gray actors (Placement)
}

// Run starts a new experiment in exp.Dir and runs it until every trial has
// ended, ctx is cancelled (trials stay resumable) or an error stops it.
func Run(ctx context.Context, exp Experiment) (*Analysis, error) {
	if err := exp.defaults(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(exp.Dir, experimentFile)); err == nil {
		return nil, fmt.Errorf("tune: %s already holds an experiment; resume it, or choose another name or folder", exp.Dir)
	}
	if err := os.MkdirAll(exp.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("tune: experiment folder: %w", err)
	}
	m, err := exp.meta()
	if err != nil {
		return nil, err
	}
	if err := writeMeta(exp.Dir, m); err != nil {
		return nil, err
	}
	r, err := newRunner(ctx, exp)
	if err != nil {
		return nil, err
	}
	return r.run()
}

// Resume continues the experiment in exp.Dir: it rebuilds every trial from
// the journal, restores the searcher and scheduler state by replaying the
// recorded events into exp's (freshly made, same-seeded) searcher and
// scheduler, and continues every unfinished trial from its last checkpoint.
// A folder that is not an experiment, or whose search space, metric,
// searcher or scheduler differ from exp's, is an error.
func Resume(ctx context.Context, exp Experiment) (*Analysis, error) {
	if err := exp.defaults(); err != nil {
		return nil, err
	}
	m, err := readMeta(exp.Dir)
	if err != nil {
		return nil, err
	}
	now, err := exp.meta()
	if err != nil {
		return nil, err
	}
	var was bytes.Buffer
	if err := json.Compact(&was, m.Space); err != nil {
		return nil, fmt.Errorf("tune: %s: recorded search space is not JSON: %w", experimentFile, err)
	}
	m.Space = was.Bytes()
	if string(now.Space) != string(m.Space) {
		return nil, fmt.Errorf("tune: the search space changed since experiment %s started:\n  was: %s\n  now: %s\nresume with the original space, or start a new experiment",
			exp.Dir, m.Space, now.Space)
	}
	for _, c := range [][3]string{
		{"metric", m.Metric, now.Metric}, {"mode", string(m.Mode), string(now.Mode)},
		{"searcher", m.Searcher, now.Searcher}, {"scheduler", m.Scheduler, now.Scheduler},
	} {
		if c[1] != c[2] {
			return nil, fmt.Errorf("tune: the %s changed since experiment %s started (was %q, now %q); resume with the original settings", c[0], exp.Dir, c[1], c[2])
		}
	}
	r, err := newRunner(ctx, exp)
	if err != nil {
		return nil, err
	}
	if err := r.replay(); err != nil {
		r.j.close()
		return nil, err
	}
	return r.run()
}

func newRunner(ctx context.Context, exp Experiment) (*runner, error) {
	j, err := openJournal(exp.Dir)
	if err != nil {
		return nil, err
	}
	return &runner{
		exp: exp, dir: exp.Dir, ctx: ctx, j: j, byID: map[string]*Trial{},
		events: make(chan opEvent, 64), search: exp.Searcher, sched: exp.Scheduler, actors: exp.actors,
	}, nil
}

// capacity is what trials may hold in all now: NodeResources, or on a
// cluster what its live nodes offer, so that trials whose node died are
// not restarted into resources that are gone, and new nodes are used.
func (r *runner) capacity() Resources {
	if r.exp.liveNodes {
		if c, ok := clusterResources(); ok {
			return c
		}
	}
	return r.exp.NodeResources
}

func (r *runner) rel(path string) string {
	if p, err := filepath.Rel(r.dir, path); err == nil {
		return p
	}
	return path
}

// record appends to the journal; a failing journal stops the experiment
// (results would otherwise be lost on a crash).
func (r *runner) record(ev journalEvent) {
	if r.replaying || r.fatal != nil {
		return
	}
	if err := r.j.append(ev); err != nil {
		r.fatal = err
	}
}

func (r *runner) setStatus(t *Trial, s Status) {
	t.Status = s
	r.record(journalEvent{Event: evStatus, Trial: t.ID, Status: s, Failures: t.Failures, Error: t.Error})
}

func (r *runner) run() (*Analysis, error) {
	r.startWall = time.Now()
	defer r.j.close()
	var tick <-chan time.Time
	if r.exp.Reporter != nil {
		tk := time.NewTicker(r.exp.ReportInterval)
		defer tk.Stop()
		tick = tk.C
		defer func() { r.exp.Reporter.Report(r.snapshot(true)) }()
	}
	var budget <-chan time.Time
	if r.exp.TimeBudget > 0 {
		tm := time.NewTimer(r.exp.TimeBudget)
		defer tm.Stop()
		budget = tm.C
	}
	for {
		if r.fatal == nil && r.ctx.Err() == nil && !r.spent {
			r.fill()
		}
		if r.inflight == 0 {
			if r.fatal != nil || r.ctx.Err() != nil || r.spent {
				break
			}
			if r.finished() {
				break
			}
			if r.flush() {
				continue
			}
			r.fatal = r.stallError()
			break
		}
		select {
		case ev := <-r.events:
			r.inflight--
			r.handle(ev)
			r.applyActions()
		case <-tick:
			r.exp.Reporter.Report(r.snapshot(false))
		case <-budget:
			r.spendBudget()
		case <-r.ctx.Done():
			// Ops see ctx too; wait for them to come back, then stop.
			r.drain()
		}
	}
	r.shutdownTrainables()
	a := &Analysis{Dir: r.dir, Trials: r.trials, BudgetSpent: r.spent && !r.finished(), Ended: r.ended}
	if r.fatal != nil {
		return a, r.fatal
	}
	if err := r.ctx.Err(); err != nil {
		return a, fmt.Errorf("tune: experiment interrupted (resume continues it): %w", err)
	}
	return a, nil
}

// spendBudget ends the run once its time budget is spent: running trials
// stop after their current step, and nothing new starts.
func (r *runner) spendBudget() {
	r.spent = true
	r.stopRunning()
}

// stopRunning asks every running trial to end after its current step.
func (r *runner) stopRunning() {
	for _, t := range r.trials {
		if t.Status == Running {
			r.Stop(t)
		}
	}
	r.applyActions()
}

func (r *runner) drain() {
	for r.inflight > 0 {
		ev := <-r.events
		r.inflight--
		r.quiesce(ev)
	}
}

// quiesce takes an operation's outcome while the experiment is stopping
// (interrupted, or a fatal error): results and checkpoints are recorded,
// a trial that was ending is marked so, and nothing new is started.
func (r *runner) quiesce(ev opEvent) {
	t := ev.t
	t.busy = false
	if ev.trainable != nil && t.trainable == nil {
		t.trainable = ev.trainable
	}
	switch {
	case ev.kind == evkResult && ev.err == nil:
		// A finished result is never lost, even while interrupting.
		r.acceptResult(ev)
	case ev.kind == evkStopped:
		if ev.ckpt != nil {
			r.addCheckpoint(t, ev.ckpt.Path)
		}
		if t.wantStop {
			r.release(t)
			r.terminate(t, Terminated)
		}
	}
}

func (r *runner) shutdownTrainables() {
	for _, t := range r.trials {
		if t.trainable != nil {
			_ = t.trainable.Stop()
			t.trainable = nil
		}
		if t.logger != nil {
			_ = t.logger.Close()
			t.logger = nil
		}
	}
}

// flush lets a waiting scheduler release trials when nothing else can
// happen; recorded so that resume replays it at the same point.
func (r *runner) flush() bool {
	f, ok := r.sched.(Flusher)
	if !ok || len(r.waiting) == 0 {
		return false
	}
	r.record(journalEvent{Event: evFlush})
	progressed := f.Flush(r)
	r.applyActions()
	return progressed || len(r.actions) > 0
}

func (r *runner) finished() bool {
	return r.done && len(r.waiting) == 0
}

func (r *runner) stallError() error {
	if len(r.waiting) > 0 {
		ids := make([]string, 0, len(r.waiting))
		for _, t := range r.waiting {
			ids = append(ids, t.ID+" ("+string(t.Status)+")")
		}
		if c := r.capacity(); r.exp.liveNodes && c != r.exp.NodeResources {
			return fmt.Errorf("tune: no trial can run: %d waiting trials (%s), nothing is running, and the cluster's live nodes now offer %v (%v when the sweep started): "+
				"join nodes to it (gray start --address ...), then resume", len(ids), strings.Join(ids, ", "), c, r.exp.NodeResources)
		}
		return fmt.Errorf("tune: no trial can run: %d waiting trials (%s) but the scheduler chose none and nothing is running", len(ids), strings.Join(ids, ", "))
	}
	return errors.New("tune: the searcher suggests no new trial while none is running; it would wait forever")
}

// fill starts as many trials as resources allow.
func (r *runner) fill() {
	capacity := r.capacity()
	for r.fatal == nil {
		if r.exp.MaxConcurrent > 0 && r.running >= r.exp.MaxConcurrent {
			return
		}
		var cands []*Trial
		hasPending := false
		for _, t := range r.waiting {
			if t.Status == Pending {
				hasPending = true
			}
			if !t.busy && t.Resources.fits(r.used, capacity) {
				cands = append(cands, t)
			}
		}
		t := r.sched.ChooseTrialToRun(cands)
		if t == nil {
			if r.done || hasPending || !r.exp.Resources.fits(r.used, capacity) {
				return
			}
			if !r.newTrial() {
				return
			}
			continue
		}
		r.start(t)
	}
}

// newTrial asks the searcher for a trial; false when it has none now.
func (r *runner) newTrial() bool {
	id := trialIDString(len(r.trials))
	cfg, err := r.search.Suggest(id)
	if errors.Is(err, ErrSearchDone) {
		r.done = true
		return false
	}
	if err != nil {
		r.fatal = fmt.Errorf("tune: searcher: %w", err)
		return false
	}
	if cfg == nil {
		return false
	}
	t := r.addTrial(id, cfg)
	if r.exp.TrialResources != nil {
		t.Resources = r.exp.TrialResources(cfg)
		if err := t.Resources.check(); err != nil {
			r.fatal = fmt.Errorf("tune: trial %s (config %s): resources: %w", id, show(cfg), err)
			return false
		}
		if !t.Resources.fits(Resources{}, r.exp.NodeResources) {
			r.fatal = fmt.Errorf("tune: trial %s (config %s) needs %v but the node has %v; lower num_workers or num_learner_threads, or set resources_per_trial",
				id, show(cfg), t.Resources, r.exp.NodeResources)
			return false
		}
	}
	r.record(journalEvent{Event: evCreated, Trial: id, Config: cfg, Dir: r.rel(t.Dir), Resources: &t.Resources})
	return true
}

func (r *runner) addTrial(id string, cfg map[string]any) *Trial {
	t := &Trial{ID: id, Config: cfg, Dir: filepath.Join(r.dir, "trial_"+id), Status: Pending,
		Resources: r.exp.Resources, seq: len(r.trials)}
	r.trials = append(r.trials, t)
	r.byID[id] = t
	r.waiting = append(r.waiting, t)
	r.sched.OnTrialAdd(t)
	return t
}

func (r *runner) unwait(t *Trial) {
	for i, w := range r.waiting {
		if w == t {
			r.waiting = append(r.waiting[:i], r.waiting[i+1:]...)
			return
		}
	}
}

// start launches t: a fresh trainable, restored from its checkpoint when it
// has one to resume from, then its first step.
func (r *runner) start(t *Trial) {
	r.unwait(t)
	if t.logger == nil {
		lg, err := r.exp.Logger(t.Dir, t.Config)
		if err != nil {
			r.fatal = fmt.Errorf("tune: trial %s: opening its logger: %w", t.ID, err)
			return
		}
		t.logger = lg
		// Restored from a checkpoint at t.Iteration (or restarted from
		// scratch): what it logged after that is re-computed now.
		if tr, ok := lg.(Truncater); ok {
			if err := tr.TruncateAfter(t.Iteration); err != nil {
				r.fatal = fmt.Errorf("tune: trial %s: dropping results after its checkpoint at iteration %d: %w", t.ID, t.Iteration, err)
				return
			}
		}
	}
	r.used.CPU += t.Resources.CPU
	r.used.GPU += t.Resources.GPU
	r.running++
	r.setStatus(t, Running)
	restore := t.restoreFrom
	t.restoreFrom = ""
	r.dispatchStart(t, restore)
}

func (r *runner) dispatchStart(t *Trial, restore string) {
	t.busy = true
	r.inflight++
	cfg := deepCopy(t.Config).(map[string]any)
	saveDir := r.saveDirFor(t, t.Iteration+1)
	factory, actors, res := r.exp.Trainable, r.actors, t.Resources
	if restore != "" {
		// The journal says where each (re)start came from: after a failure
		// (a dead node), a pause or an exploit.
		r.record(journalEvent{Event: evRestored, Trial: t.ID, Checkpoint: &Checkpoint{Path: r.rel(restore), Iteration: t.Iteration, TimeTotal: t.TimeTotal}, Failures: t.Failures})
	}
	go func() {
		tr := placed(factory(), actors, res)
		ev := opEvent{t: t, trainable: tr}
		if err := tr.Setup(r.ctx, cfg, t.Dir); err != nil {
			ev.kind, ev.err = evkError, fmt.Errorf("setup: %w", err)
			r.events <- ev
			return
		}
		if restore != "" {
			if err := tr.Restore(r.ctx, restore); err != nil {
				ev.kind, ev.err = evkError, fmt.Errorf("restoring %s: %w", restore, err)
				r.events <- ev
				return
			}
		}
		stepOp(r.ctx, tr, saveDir, &ev)
		r.events <- ev
	}()
}

func (r *runner) dispatchStep(t *Trial) {
	t.busy = true
	r.inflight++
	tr := t.trainable
	saveDir := r.saveDirFor(t, t.Iteration+1)
	go func() {
		ev := opEvent{t: t}
		stepOp(r.ctx, tr, saveDir, &ev)
		r.events <- ev
	}()
}

// acceptResult adds the runner's keys to a result and records it.
func (r *runner) acceptResult(ev opEvent) map[string]any {
	t := ev.t
	t.Iteration++
	res := make(map[string]any, len(ev.result)+8)
	for k, v := range ev.result {
		res[k] = v
	}
	if _, ok := res["time_this_iter_s"]; !ok {
		res["time_this_iter_s"] = ev.dur
	}
	dt, _ := toFloat(res["time_this_iter_s"])
	t.TimeTotal += dt
	res["training_iteration"] = t.Iteration
	res["time_total_s"] = t.TimeTotal
	res["trial_id"] = t.ID
	res["timestamp"] = time.Now().Unix()
	t.LastResult = res
	if t.logger != nil {
		if err := t.logger.Log(res); err != nil && r.fatal == nil {
			r.fatal = fmt.Errorf("tune: trial %s: logging a result: %w", t.ID, err)
		}
	}
	r.record(journalEvent{Event: evResult, Trial: t.ID, Result: res})
	if ev.ckpt != nil {
		r.addCheckpoint(t, ev.ckpt.Path)
	}
	return res
}

func (r *runner) handle(ev opEvent) {
	if r.fatal != nil || r.ctx.Err() != nil {
		r.quiesce(ev)
		return
	}
	t := ev.t
	t.busy = false
	if ev.trainable != nil {
		t.trainable = ev.trainable
	}
	switch ev.kind {
	case evkError:
		r.fail(t, ev.err)
	case evkStopped:
		r.stopped(t, ev)
	case evkDone:
		r.finish(t, true)
	case evkResult:
		r.result(t, ev)
	}
}

func (r *runner) result(t *Trial, ev opEvent) {
	res := r.acceptResult(ev)
	if r.fatal != nil {
		return
	}
	if !r.sawResult {
		r.sawResult = true
		if err := r.checkKeys(t, res); err != nil {
			r.fatal = err
			return
		}
	}
	r.search.OnTrialResult(t.ID, res)
	if r.ended == "" {
		if key, ok := reached(r.exp.StopExperiment, res); ok {
			r.endExperiment(t, fmt.Sprintf("trial %s reached %s >= %g", t.ID, key, r.exp.StopExperiment[key]))
		}
	}
	stop := t.wantStop || r.stopCriteria(t, res)
	d := Continue
	if !stop {
		d = r.sched.OnTrialResult(r, t, res)
	}
	switch {
	case stop || d == Stop:
		r.finish(t, ev.ckpt == nil)
	case t.reconfig:
		// PBT: stop this trainable; the pending action restarts it.
		t.wantPause = false
		r.dispatchStop(t, "")
	case d == Pause || t.wantPause:
		t.wantPause = true
		dir := ""
		if ev.ckpt == nil {
			dir = r.checkpointDir(t, t.Iteration)
		}
		r.dispatchStop(t, dir)
	default:
		r.dispatchStep(t)
	}
}

func (r *runner) checkKeys(t *Trial, res map[string]any) error {
	var missing []string
	if r.exp.Metric != "" {
		if _, ok := ResultFloat(res, r.exp.Metric); !ok {
			missing = append(missing, fmt.Sprintf("metric %q", r.exp.Metric))
		}
	}
	for _, c := range []struct {
		what     string
		criteria map[string]float64
	}{{"stop criterion", r.exp.Stop}, {"stop_experiment criterion", r.exp.StopExperiment}} {
		for k := range c.criteria {
			if _, ok := ResultFloat(res, k); !ok {
				missing = append(missing, fmt.Sprintf("%s %q", c.what, k))
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	keys := make([]string, 0, len(res))
	for k := range res {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return fmt.Errorf("tune: trial %s's first result does not report %s; it reports: %s (nested keys are written a/b)",
		t.ID, strings.Join(missing, " or "), strings.Join(keys, ", "))
}

func (r *runner) stopCriteria(t *Trial, res map[string]any) bool {
	if _, ok := reached(r.exp.Stop, res); ok {
		return true
	}
	return r.exp.StopFunc != nil && r.exp.StopFunc(t.ID, res)
}

// reached returns a key of criteria whose value res reaches (>=).
func reached(criteria map[string]float64, res map[string]any) (string, bool) {
	for k, target := range criteria {
		if v, ok := ResultFloat(res, k); ok && v >= target {
			return k, true
		}
	}
	return "", false
}

// endExperiment ends the experiment because of t's result: no trial
// starts again, running ones (t too) stop after their current step, and
// the journal says so, so that Resume does nothing.
func (r *runner) endExperiment(t *Trial, why string) {
	r.ended, r.done = why, true
	r.record(journalEvent{Event: evEnded, Trial: t.ID, Error: why})
	for _, w := range slices.Clone(r.waiting) {
		r.unwait(w)
		r.terminate(w, Terminated)
	}
	r.stopRunning()
}

// finish ends t normally, saving a final checkpoint when asked.
func (r *runner) finish(t *Trial, needSave bool) {
	t.wantStop = true
	dir := ""
	if r.exp.CheckpointAtEnd && needSave && t.trainable != nil && t.Iteration > 0 {
		dir = r.checkpointDir(t, t.Iteration)
	}
	r.dispatchStop(t, dir)
}

func (r *runner) release(t *Trial) {
	r.used.CPU -= t.Resources.CPU
	r.used.GPU -= t.Resources.GPU
	r.running--
}

func (r *runner) stopped(t *Trial, ev opEvent) {
	if ev.ckpt != nil {
		r.addCheckpoint(t, ev.ckpt.Path)
	}
	switch {
	case t.wantStop:
		r.release(t)
		r.terminate(t, Terminated)
	case t.wantPause:
		t.wantPause = false
		r.release(t)
		if cp, ok := t.LatestCheckpoint(); ok {
			t.restoreFrom = cp.Path
		}
		r.closeLogger(t)
		r.setStatus(t, Paused)
		r.waiting = append(r.waiting, t)
		r.sortWaiting()
	default:
		// Reconfigured by PBT (or a failed exploit copy): restart from the
		// checkpoint chosen, else from the trial's own latest.
		t.reconfig = false
		restore := t.restoreFrom
		t.restoreFrom = ""
		if restore == "" {
			t.Iteration, t.TimeTotal = 0, 0
			if cp, ok := t.LatestCheckpoint(); ok {
				restore, t.Iteration, t.TimeTotal = cp.Path, cp.Iteration, cp.TimeTotal
			}
		}
		r.dispatchStart(t, restore)
	}
}

func (r *runner) sortWaiting() {
	sort.SliceStable(r.waiting, func(i, j int) bool { return r.waiting[i].seq < r.waiting[j].seq })
}

func (r *runner) closeLogger(t *Trial) {
	if t.logger != nil {
		if err := t.logger.Close(); err != nil && r.fatal == nil {
			r.fatal = fmt.Errorf("tune: trial %s: closing its logger: %w", t.ID, err)
		}
		t.logger = nil
	}
}

// terminate moves t to a final status and tells scheduler and searcher.
func (r *runner) terminate(t *Trial, s Status) {
	t.wantStop, t.wantPause = false, false
	r.closeLogger(t)
	r.setStatus(t, s)
	r.sched.OnTrialComplete(r, t, t.LastResult)
	r.search.OnTrialComplete(t.ID, t.LastResult, s == Errored)
}

func (r *runner) fail(t *Trial, err error) {
	if t.trainable != nil {
		_ = t.trainable.Stop()
		t.trainable = nil
	}
	if r.ctx.Err() != nil {
		// Interrupted, not failed: the trial stays resumable.
		r.release(t)
		return
	}
	r.release(t)
	t.reconfig, t.wantPause = false, false
	t.Failures++
	t.Error = err.Error()
	if t.Failures > r.exp.MaxFailures || t.wantStop {
		r.terminate(t, Errored)
		return
	}
	// Retry from the last checkpoint.
	t.restoreFrom = ""
	t.Iteration, t.TimeTotal = 0, 0
	if cp, ok := t.LatestCheckpoint(); ok {
		t.restoreFrom, t.Iteration, t.TimeTotal = cp.Path, cp.Iteration, cp.TimeTotal
	}
	r.closeLogger(t)
	r.setStatus(t, Pending)
	r.waiting = append(r.waiting, t)
	r.sortWaiting()
}
