package sched

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// core is what sim drives: a Core or a Cluster.
type core interface {
	Effects() []Effect[int]
	Check() error
	Feasible(string, task.Resources) error
	Submit(int, *task.Resources, bool)
	SubmitPacked(int, *task.Resources, int)
	WorkerReady(WorkerID)
	WorkerDied(WorkerID)
	Running(WorkerID) (int, bool)
	TaskDone(WorkerID, bool)
	Epoch(WorkerID) uint64
	Block(WorkerID, uint64)
	Unblock(WorkerID, uint64) bool
	lending(WorkerID) bool
	GiveBack(WorkerID, func(int) bool)
	ActorGone(ids.ActorID)
	WaitActor(ids.ActorID, task.Resources)
	Queued() int
	Available() task.Resources
	Boot()
}

// sim plays the node's part for a core: it carries out effects and makes up
// events the way worker processes would, checking what a worker would see.
type sim struct {
	t   *testing.T
	c   core
	cl  *Cluster[int] // nil: c is a lone Core
	res map[int]*task.Resources
	rng *rand.Rand
	// pack, when set, decides which tasks are submitted packed (as short),
	// drawn apart from rng so that the other events' draws stay as they were.
	pack     *rand.Rand
	starting []WorkerID
	on       map[WorkerID][]int // tasks sent, in order
	gone     map[WorkerID]bool  // told to exit, or retiring: it will die
	blocks   map[WorkerID][]uint64
	parked   map[WorkerID]bool
	recalled map[WorkerID]bool
	next     int
	ended    map[int]string // task -> "run" or "failed"
	actors   []ids.ActorID
	started  map[ids.ActorID]bool
	last     string    // the last event, for failures
	w        *simWaits // the Gets and Waits (waits_random_test.go)
	// granted is each node's grant as its daemon counts it: set when the
	// node joins, grown by Grow, less what views report Returned.
	granted map[NodeID]task.Resources
	// gpus are the GPU indices each node's daemon granted (it owns them;
	// not necessarily the smallest), less those views report returned.
	gpus map[NodeID]map[int]bool
	// held are effects taken early (to read a death's Orphan effects)
	// and carried out with the next ones, in order.
	held []Effect[int]
}

// take returns the core's effects now; they are carried out later, in
// order, with the next ones (effectsOnce).
func (s *sim) take() []Effect[int] {
	es := s.c.Effects()
	s.held = append(s.held, es...)
	return es
}

var shapes = []task.Resources{
	{CPU: 1}, {CPU: 1}, {CPU: 0.5}, {CPU: 2}, {CPU: 0}, {CPU: 1, GPU: 1},
	{CPU: 0.25, Custom: map[string]float64{"disk": 1}},
}

func (s *sim) effects() {
	for s.effectsOnce() {
	}
	if err := s.c.Check(); err != nil {
		s.t.Fatalf("after %s: %v", s.last, err)
	}
	s.checkWaits(false)
}

// effectsOnce carries out the effects of the core and the Waits pending now,
// and reports whether there were any.
func (s *sim) effectsOnce() bool {
	es, as := append(s.held, s.c.Effects()...), 0
	s.held = nil
	for a, ok := s.w.ws.Next(); ok; a, ok = s.w.ws.Next() { // as the node takes them
		s.answer(a)
		as++
	}
	for _, e := range es {
		switch e.Kind {
		case Run:
			if _, ok := s.on[e.Worker]; !ok || s.gone[e.Worker] {
				s.t.Fatalf("task %d sent to worker %d, which is not connected or is leaving", e.Task, e.Worker)
			}
			if s.ended[e.Task] != "" {
				s.t.Fatalf("task %d sent after it ended", e.Task)
			}
			s.on[e.Worker] = append(s.on[e.Worker], e.Task)
		case Spawn:
			s.starting = append(s.starting, e.Worker)
		case Exit:
			if len(s.on[e.Worker]) > 0 {
				s.t.Fatalf("worker %d told to exit with tasks %v", e.Worker, s.on[e.Worker])
			}
			s.gone[e.Worker] = true
		case Recall:
			s.recalled[e.Worker] = true
		case Resume:
			// A worker that finished its task while lending its CPUs
			// and went on with the next waits for them too (TaskDone).
			s.parked[e.Worker] = false
			s.w.ws.Resume(e.Worker)
		case StartActor:
			s.started[e.Actor] = true
		}
	}
	return len(es)+as > 0
}

func (s *sim) busy() []WorkerID {
	var ws []WorkerID
	for w, ts := range s.on {
		if len(ts) > 0 {
			ws = append(ws, w)
		}
	}
	slices.Sort(ws)
	return ws
}

func (s *sim) pick(ws []WorkerID) (WorkerID, bool) {
	if len(ws) == 0 {
		return 0, false
	}
	return ws[s.rng.IntN(len(ws))], true
}

func (s *sim) submit() {
	r := &shapes[s.rng.IntN(len(shapes))]
	if s.c.Feasible("task", *r) != nil {
		return // the node fails it at once, without the core
	}
	s.next++
	s.res[s.next] = r
	pipe := s.rng.IntN(4) > 0
	if s.pack != nil && pipe && s.pack.IntN(3) == 0 { // a short task: packed onto busy workers
		s.c.SubmitPacked(s.next, r, 1+s.pack.IntN(MaxPack+8))
		return
	}
	s.c.Submit(s.next, r, pipe)
}

func (s *sim) connect() {
	if len(s.starting) == 0 {
		return
	}
	i := s.rng.IntN(len(s.starting))
	w := s.starting[i]
	s.starting = slices.Delete(s.starting, i, i+1)
	if s.rng.IntN(10) == 0 { // died before connecting
		s.c.WorkerDied(w)
		return
	}
	s.on[w] = nil
	s.c.WorkerReady(w)
}

func (s *sim) finish(w WorkerID) {
	got, ok := s.c.Running(w)
	if !ok || got != s.on[w][0] {
		s.t.Fatalf("worker %d runs %d (%v), the core says %d", w, s.on[w][0], ok, got)
	}
	s.ended[got] = "run"
	s.on[w] = s.on[w][1:]
	delete(s.blocks, w)
	s.parked[w] = false
	retiring := s.rng.IntN(20) == 0
	if retiring {
		s.gone[w] = true
	}
	s.taskEnded(w, s.c.Epoch(w))
	s.c.TaskDone(w, retiring)
}

func (s *sim) die(w WorkerID) {
	s.c.WorkerDied(w)
	var running int
	ok := false
	for _, e := range s.take() {
		if e.Kind == Orphan {
			if ok || e.Worker != w {
				s.t.Fatalf("worker %d's death orphaned task %d of worker %d (a second: %v)", w, e.Task, e.Worker, ok)
			}
			running, ok = e.Task, true
		}
	}
	if ts := s.on[w]; len(ts) > 0 {
		if !ok || running != ts[0] {
			s.t.Fatalf("worker %d died running %d, the core says %d (%v)", w, ts[0], running, ok)
		}
		s.ended[running] = "failed"
	}
	s.workerGone(w)
	delete(s.on, w)
	delete(s.gone, w)
	delete(s.blocks, w)
	delete(s.parked, w)
	delete(s.recalled, w)
}

func (s *sim) step() {
	n := 11
	if s.cl != nil {
		n = 15
	}
	if s.rng.IntN(3) == 0 {
		s.last = "a Waits event"
		s.waitsStep()
		s.effects()
		return
	}
	ev := s.rng.IntN(n)
	s.last = fmt.Sprint("event ", ev)
	switch ev {
	case 0, 1, 2:
		s.submit()
	case 3:
		s.connect()
	case 4, 5:
		if w, ok := s.pick(s.busy()); ok && (len(s.blocks[w]) == 0 || s.rng.IntN(5) == 0) {
			s.finish(w)
		}
	case 6:
		if w, ok := s.pick(s.busy()); ok {
			e := s.c.Epoch(w)
			s.blocks[w] = append(s.blocks[w], e)
			s.c.Block(w, e)
		}
	case 7:
		var ws []WorkerID
		for w, b := range s.blocks {
			if len(b) > 0 {
				ws = append(ws, w)
			}
		}
		slices.Sort(ws)
		if w, ok := s.pick(ws); ok {
			e := s.blocks[w][0]
			s.blocks[w] = s.blocks[w][1:]
			if !s.c.Unblock(w, e) {
				s.parked[w] = true
			}
		}
	case 8:
		var ws []WorkerID
		for w, r := range s.recalled {
			if r {
				ws = append(ws, w)
			}
		}
		slices.Sort(ws)
		if w, ok := s.pick(ws); ok {
			s.recalled[w] = false
			back := map[int]bool{}
			var keep []int
			// A worker recalled between two tasks (not blocked, not
			// lending) may not have started its first: it gives all back.
			// One whose running task asked for objects has started it.
			all := len(s.blocks[w]) == 0 && !s.c.lending(w) && s.rng.IntN(4) == 0 && !s.asked(w)
			for i, x := range s.on[w] {
				if i == 0 && !all { // started: not given back
					keep = append(keep, x)
					continue
				}
				if s.rng.IntN(2) == 0 {
					back[x] = true
				} else {
					keep = append(keep, x)
				}
			}
			s.on[w] = keep
			s.c.GiveBack(w, func(x int) bool { return back[x] })
		}
	case 9:
		var ws []WorkerID
		for w := range s.on {
			if s.gone[w] || s.rng.IntN(8) == 0 {
				ws = append(ws, w)
			}
		}
		slices.Sort(ws)
		if w, ok := s.pick(ws); ok {
			s.die(w)
		}
	case 10:
		if len(s.actors) > 0 && s.rng.IntN(2) == 0 {
			i := s.rng.IntN(len(s.actors))
			s.c.ActorGone(s.actors[i])
			s.actors = slices.Delete(s.actors, i, i+1)
		} else {
			id := ids.ActorID{byte(len(s.actors)), byte(s.next), byte(s.rng.IntN(256))}
			s.actors = append(s.actors, id)
			s.c.WaitActor(id, task.Resources{CPU: float64(s.rng.IntN(2)), GPU: float64(s.rng.IntN(2))})
		}
	case 11:
		capa := shapes[s.rng.IntN(len(shapes))]
		granted := capa.Clone()
		granted.CPU *= float64(s.rng.IntN(3)) / 2
		granted.GPU = float64(s.rng.IntN(int(capa.GPU) + 1))
		k := NodeID(s.rng.IntN(4) + 1)
		gpus := s.pickGPUs(nil, int(granted.GPU))
		if s.cl.AddNodeGrant(k, granted, gpus, capa) == nil {
			s.granted[k] = granted.Clone()
			s.gpus[k] = map[int]bool{}
			for _, i := range gpus {
				s.gpus[k][i] = true
			}
		}
	case 12:
		s.removeNode(NodeID(s.rng.IntN(4) + 1))
	case 13, 14: // the node's daemon grows or reclaims the grant
		nodes := s.cl.Nodes()
		k := nodes[s.rng.IntN(len(nodes))]
		v := s.view(k)
		if s.rng.IntN(2) == 0 {
			room := v.Capacity.Sub(v.Held)
			s.grow(k, task.Resources{CPU: room.CPU * float64(s.rng.IntN(3)) / 2, GPU: float64(s.rng.IntN(int(room.GPU) + 1))})
		} else {
			s.cl.Step(Reclaimed{Node: k, Res: task.Resources{CPU: v.Held.CPU * float64(s.rng.IntN(3)) / 2, GPU: float64(s.rng.IntN(int(v.Held.GPU) + 1)),
				Custom: map[string]float64{"disk": float64(s.rng.IntN(2))}}})
		}
	}
	s.effects()
	if s.cl != nil {
		for _, k := range s.cl.Nodes() {
			s.view(k)
		}
	}
}

// removeNode drops node k as its death would: its workers are gone, the
// tasks it held are submitted again, its actors are forgotten.
func (s *sim) removeNode(k NodeID) {
	s.cl.Step(NodeRemoved{Node: k})
	var tasks []int
	var actors []ids.ActorID
	for _, e := range s.take() {
		switch e.Kind {
		case Orphan:
			tasks = append(tasks, e.Task)
		case OrphanActor:
			actors = append(actors, e.Actor)
		}
	}
	delete(s.granted, k)
	delete(s.gpus, k)
	for w := range s.on {
		if NodeOf(w) == k {
			s.workerGone(w)
			delete(s.on, w)
			delete(s.gone, w)
			delete(s.blocks, w)
			delete(s.parked, w)
			delete(s.recalled, w)
		}
	}
	s.starting = slices.DeleteFunc(s.starting, func(w WorkerID) bool { return NodeOf(w) == k })
	for _, t := range tasks {
		if s.ended[t] != "" {
			s.t.Fatalf("node %d returned task %d, which ended already", k, t)
		}
		s.cl.Step(Submitted[int]{Task: t, Res: s.res[t], Pipelined: false})
	}
	for _, a := range actors {
		i := slices.Index(s.actors, a)
		if i < 0 {
			s.t.Fatalf("node %d returned actor %v, which is gone", k, a)
		}
		s.actors = slices.Delete(s.actors, i, i+1)
	}
}

// growAll grows every node's grant to its capacity, as the daemons would
// for a job alone on them; it reports whether any grew.
func (s *sim) growAll() bool {
	grew := false
	for _, k := range s.cl.Nodes() {
		v := s.view(k)
		if room := v.Capacity.Sub(v.Held); !room.NonNegative().IsZero() {
			s.grow(k, room)
			grew = true
		}
	}
	return grew
}

// view takes node k's grant view, counting what it returned, and checks
// that the core holds exactly what the daemon granted it.
func (s *sim) view(k NodeID) GrantView {
	v, ok := s.cl.Grant(k)
	if !ok {
		return v
	}
	g := s.granted[k].Clone()
	addTo(&g, v.Returned, -1)
	s.granted[k] = g
	if !g.NonNegative().Equal(v.Held.NonNegative()) {
		s.t.Fatalf("node %d holds %s, its daemon granted %s (after %s)", k, v.Held, g, s.last)
	}
	if len(v.ReturnedGPUs) != int(v.Returned.GPU) {
		s.t.Fatalf("node %d returned %g GPUs with indices %v (after %s)", k, v.Returned.GPU, v.ReturnedGPUs, s.last)
	}
	if set := s.gpus[k]; set != nil {
		for _, i := range v.ReturnedGPUs {
			if !set[i] {
				s.t.Fatalf("node %d returned GPU %d, which its daemon did not grant it (after %s)", k, i, s.last)
			}
			delete(set, i)
		}
		held := s.cl.cores[k].heldGPUs()
		if !maps.Equal(held, set) {
			s.t.Fatalf("node %d holds GPUs %v, its daemon granted %v (after %s)", k, held, set, s.last)
		}
	}
	return v
}

// pickGPUs returns n random GPU indices, none in held: what a daemon that
// owns the node's GPUs grants, other drivers holding the others (so not
// necessarily from 0).
func (s *sim) pickGPUs(held map[int]bool, n int) []int {
	const indices = 4 // more than any shape's GPUs
	out := []int{}
	for _, i := range s.rng.Perm(indices) {
		if len(out) < n && !held[i] {
			out = append(out, i)
		}
	}
	return out
}

func (s *sim) grow(k NodeID, r task.Resources) {
	r.GPU = float64(int(r.GPU))
	g := s.granted[k].Clone()
	addTo(&g, r, 1)
	s.granted[k] = g
	var gpus []int
	if set := s.gpus[k]; set != nil {
		gpus = s.pickGPUs(set, int(r.GPU))
		for _, i := range gpus {
			set[i] = true
		}
	}
	s.cl.Step(Grew{Node: k, Res: r, GPUs: gpus})
}

// drain lets every worker connect and finish and every actor go.
func (s *sim) drain() {
	for _, id := range s.actors {
		s.c.ActorGone(id)
	}
	s.actors = nil
	s.effects()
	for range 100000 {
		if len(s.starting) > 0 {
			w := s.starting[0]
			s.starting = s.starting[1:]
			s.on[w] = nil
			s.c.WorkerReady(w)
		} else if w, ok := s.pick(s.busy()); ok {
			for _, e := range s.blocks[w] {
				if !s.c.Unblock(w, e) {
					s.parked[w] = true
				}
			}
			delete(s.blocks, w)
			s.effects()
			s.finish(w)
		} else if w, ok := s.pick(slices.Sorted(maps.Keys(s.gone))); ok {
			s.die(w)
		} else if s.c.Queued() == 0 {
			return
		} else if s.cl != nil && s.growAll() {
			// The daemons grant what the queued tasks wait for.
		} else {
			if s.cl != nil {
				for _, k := range s.cl.Nodes() {
					c := s.cl.Node(k)
					s.t.Logf("node %d: queued %d total %v avail %v pool %d starting %d", k, c.Queued(), c.Total(), c.Available(), len(c.pool), c.starting)
				}
				s.t.Logf("waiting %v", s.cl.Waiting())
			}
			s.t.Fatalf("%d tasks queued, no worker busy or starting", s.c.Queued())
		}
		s.effects()
	}
	s.t.Fatal("the core did not drain")
}

// Thousands of random event sequences keep the core's invariants: no
// resource oversubscribed or lost, every submitted task ends run or failed,
// everything held is released at the end.
func TestRandomEvents(t *testing.T) {
	seqs := 2000
	if testing.Short() || raceEnabled {
		seqs = 200
	}
	for seq := range seqs {
		total := task.Resources{CPU: float64(1 + seq%4), GPU: float64(seq % 3), Custom: map[string]float64{"disk": 2}}
		c := New[int](Config{Total: total, Workers: 1 + seq%3, PackWorkers: seq % 3})
		s := &sim{
			t: t, c: c, res: map[int]*task.Resources{}, rng: rand.New(rand.NewPCG(uint64(seq), 7)),
			pack: rand.New(rand.NewPCG(uint64(seq), 13)),
			on:   map[WorkerID][]int{}, gone: map[WorkerID]bool{}, blocks: map[WorkerID][]uint64{},
			parked: map[WorkerID]bool{}, recalled: map[WorkerID]bool{}, ended: map[int]string{},
			started: map[ids.ActorID]bool{},
		}
		s.w = newSimWaits(c)
		c.Boot()
		s.effects()
		for range 100 {
			s.step()
		}
		s.drain()
		s.checkWaits(true)
		for i := 1; i <= s.next; i++ {
			if s.ended[i] == "" {
				t.Fatalf("seq %d: task %d of %d never ended", seq, i, s.next)
			}
		}
		if got := s.c.Available(); !near(got.CPU, total.CPU) || !near(got.GPU, total.GPU) || !near(got.Custom["disk"], 2) {
			t.Fatalf("seq %d: %s free at the end, want %s", seq, fmt.Sprint(got), fmt.Sprint(total))
		}
	}
}

// The same with several nodes that join and leave at random: each node's
// resources are never oversubscribed, every task ends run or failed (a
// node's death returns its tasks, which run elsewhere) and every resource
// is free at the end.
//
// Several streams of draws run, each from its own key: a bug that one
// stream never reaches showed in others (a reopened Get of an ended task
// lent the CPUs of the worker's next task; TestReopenedGetOfEndedTaskLendsNothing).
func TestRandomEventsCluster(t *testing.T) {
	seqs := 400
	if testing.Short() || raceEnabled {
		seqs = 50
	}
	for _, stream := range []uint64{11, 1, 2, 4, 6} {
		t.Run(fmt.Sprint("stream", stream), func(t *testing.T) {
			for seq := range seqs {
				randomCluster(t, seq, stream)
			}
		})
	}
}

// randomCluster plays sequence seq of a stream of TestRandomEventsCluster.
func randomCluster(t *testing.T, seq int, stream uint64) {
	defer func() {
		if t.Failed() {
			t.Logf("in sequence %d of stream %d", seq, stream)
		}
	}()
	total := task.Resources{CPU: float64(seq % 3), GPU: float64(seq % 2), Custom: map[string]float64{"disk": 2}}
	cl := NewCluster[int](Config{Total: total, Workers: 1})
	s := &sim{
		t: t, c: stepped{cl}, cl: cl, res: map[int]*task.Resources{}, rng: rand.New(rand.NewPCG(uint64(seq), stream)),
		on: map[WorkerID][]int{}, gone: map[WorkerID]bool{}, blocks: map[WorkerID][]uint64{},
		parked: map[WorkerID]bool{}, recalled: map[WorkerID]bool{}, ended: map[int]string{},
		started: map[ids.ActorID]bool{},
	}
	s.w = newSimWaits(cl.Lender())
	s.granted = map[NodeID]task.Resources{Local: total.Clone()}
	s.gpus = map[NodeID]map[int]bool{}
	big := task.Resources{CPU: 4, GPU: 2, Custom: map[string]float64{"disk": 2}}
	if err := cl.AddNode(1, big); err != nil {
		t.Fatal(err)
	}
	s.granted[1] = big.Clone()
	cl.Step(Booted{})
	s.effects()
	for range 150 {
		s.step()
	}
	// A node that holds any request joins, so that every task can end.
	if err := cl.AddNode(9, big); err != nil {
		t.Fatal(err)
	}
	s.granted[9] = big.Clone()
	s.effects()
	s.drain()
	s.checkWaits(true)
	for i := 1; i <= s.next; i++ {
		if s.ended[i] == "" {
			t.Fatalf("seq %d: task %d of %d never ended", seq, i, s.next)
		}
	}
	for _, k := range cl.Nodes() {
		c := cl.Node(k)
		if got, want := c.Available(), c.Total(); !near(got.CPU, want.CPU) || !near(got.GPU, want.GPU) {
			t.Fatalf("seq %d node %d: %s free at the end, want %s", seq, k, fmt.Sprint(got), fmt.Sprint(want))
		}
	}
}

// stepped drives a Cluster through Step, the way the node does, behind the
// method set sim shares with a lone Core.
type stepped struct{ *Cluster[int] }

func (s stepped) Submit(t int, r *task.Resources, pipe bool) {
	s.Step(Submitted[int]{Task: t, Res: r, Pipelined: pipe})
}
func (s stepped) SubmitPacked(t int, r *task.Resources, depth int) {
	s.Step(SubmittedPacked[int]{Task: t, Res: r, Depth: depth})
}
func (s stepped) WorkerReady(w WorkerID)                   { s.Step(WorkerReady{W: w}) }
func (s stepped) WorkerDied(w WorkerID)                    { s.Step(WorkerDied{W: w}) }
func (s stepped) TaskDone(w WorkerID, retiring bool)       { s.Step(TaskDone{W: w, Retiring: retiring}) }
func (s stepped) Block(w WorkerID, e uint64)               { s.Step(Blocked{W: w, Epoch: e}) }
func (s stepped) Unblock(w WorkerID, e uint64) bool        { return s.Lender().Unblock(w, e) }
func (s stepped) GiveBack(w WorkerID, back func(int) bool) { s.Step(GaveBack[int]{W: w, Back: back}) }
func (s stepped) ActorGone(id ids.ActorID)                 { s.Step(ActorGone{ID: id}) }
func (s stepped) WaitActor(id ids.ActorID, r task.Resources) {
	s.Step(ActorWaits{ID: id, Res: r})
}
func (s stepped) Boot() { s.Step(Booted{}) }
