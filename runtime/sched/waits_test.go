package sched

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gray-ml/gray/runtime/ids"
)

// lender is a Lender that records the calls and answers Unblock with park
// (true: the worker must wait for its CPUs).
type lender struct {
	calls []string
	park  bool
}

func (l *lender) Epoch(w WorkerID) uint64 { return 7 }
func (l *lender) Block(w WorkerID, e uint64) {
	l.calls = append(l.calls, fmt.Sprintf("block %d", w))
}
func (l *lender) Unblock(w WorkerID, e uint64) bool {
	l.calls = append(l.calls, fmt.Sprintf("unblock %d", w))
	return !l.park
}

func obj(k int) ids.ObjectID { return ids.ObjectID{byte(k), 1} }

func objs(ks ...int) []ids.ObjectID {
	var out []ids.ObjectID
	for _, k := range ks {
		out = append(out, obj(k))
	}
	return out
}

// answers renders answers as "payload:ready bits" (+ "timeout").
func answers(as []Answer[string]) []string {
	var out []string
	for _, a := range as {
		s := a.Payload + ":"
		for _, ok := range a.Ready {
			s += map[bool]string{true: "1", false: "0"}[ok]
		}
		if a.TimedOut {
			s += " timeout"
		}
		out = append(out, s)
	}
	return out
}

func get(p string, w WorkerID, ready []bool, ks ...int) Request[string] {
	return Request[string]{Payload: p, Worker: w, Lends: w != NoWorker, Objects: objs(ks...), Ready: ready, Need: len(ks)}
}

func wait(p string, w WorkerID, need int, ready []bool, ks ...int) Request[string] {
	r := get(p, w, ready, ks...)
	r.Need = need
	return r
}

// Each transition of Waits, with what it answers and what it asks of the
// scheduling core.
func TestWaitsTransitions(t *testing.T) {
	tests := []struct {
		name  string
		park  bool
		run   func(ws *Waits[string]) []string // returns the answers, in order
		calls []string                         // asked of the core
		want  []string                         // the answers
		open  int                              // requests open at the end
	}{
		{
			name: "get of ready objects is answered at once without blocking",
			want: []string{"g:11"},
			run: func(ws *Waits[string]) []string {
				ws.Add(get("g", 1, []bool{true, true}, 1, 2))
				return answers(ws.Effects())
			},
		},
		{
			name: "get waits for every object, lends the CPUs, gets them back",
			want: []string{"g:111"},
			run: func(ws *Waits[string]) []string {
				ws.Add(get("g", 1, []bool{false, true, false}, 1, 2, 3))
				ws.Stored(obj(1))
				before := answers(ws.Effects())
				ws.Stored(obj(3))
				return append(before, answers(ws.Effects())...)
			},
			calls: []string{"block 1", "unblock 1"},
		},
		{
			name: "the driver's get never blocks a worker",
			want: []string{"g:1"},
			run: func(ws *Waits[string]) []string {
				ws.Add(get("g", NoWorker, nil, 1))
				ws.Stored(obj(1))
				return answers(ws.Effects())
			},
		},
		{
			name: "wait answers once num objects are ready, the first ones only",
			want: []string{"w:010"},
			run: func(ws *Waits[string]) []string {
				ws.Add(wait("w", NoWorker, 1, nil, 1, 2, 3))
				ws.Stored(obj(2))
				ws.Stored(obj(1))
				if ws.Waiting(obj(1)) || ws.Waiting(obj(3)) {
					return []string{"still waiting"}
				}
				return answers(ws.Effects())
			},
		},
		{
			name: "wait with more ready than asked reports num of them",
			want: []string{"w:110"},
			run: func(ws *Waits[string]) []string {
				ws.Add(wait("w", 1, 2, []bool{true, true, true}, 1, 2, 3))
				return answers(ws.Effects())
			},
		},
		{
			name: "timeout answers a wait with what is ready, once",
			want: []string{"w:001 timeout"},
			run: func(ws *Waits[string]) []string {
				id := ws.Add(wait("w", 1, 2, nil, 1, 2, 3))
				ws.Stored(obj(3))
				ws.Timeout(id)
				ws.Timeout(id)
				ws.Stored(obj(1))
				return answers(ws.Effects())
			},
			calls: []string{"block 1", "unblock 1"},
		},
		{
			name: "a timeout after the answer does nothing",
			want: []string{"w:1"},
			run: func(ws *Waits[string]) []string {
				id := ws.Add(wait("w", 1, 1, nil, 1))
				ws.Stored(obj(1))
				ws.Timeout(id)
				return answers(ws.Effects())
			},
			calls: []string{"block 1", "unblock 1"},
		},
		{
			name: "an answer waits for the worker's CPUs, then goes out on Resume",
			want: []string{"g:1"},
			park: true,
			run: func(ws *Waits[string]) []string {
				ws.Add(get("g", 1, nil, 1))
				ws.Stored(obj(1))
				if ws.Pending() {
					return []string{"answered before resume"}
				}
				ws.Resume(1)
				return answers(ws.Effects())
			},
			calls: []string{"block 1", "unblock 1"},
		},
		{
			name: "a parked answer is dropped when its task ends",
			park: true,
			run: func(ws *Waits[string]) []string {
				ws.Add(get("g", 1, nil, 1))
				ws.Stored(obj(1))
				ws.TaskEnded(1)
				ws.Resume(1)
				return answers(ws.Effects())
			},
			calls: []string{"block 1", "unblock 1"},
		},
		{
			name: "a dead worker's requests are dropped, others stay",
			want: []string{"g2:1"},
			run: func(ws *Waits[string]) []string {
				ws.Add(get("g1", 1, nil, 1))
				ws.Add(get("g2", 2, nil, 1))
				ws.WorkerGone(1)
				ws.Stored(obj(1))
				return answers(ws.Effects())
			},
			calls: []string{"block 1", "block 2", "unblock 2"},
		},
		{
			name: "a dropped request frees its objects from waiting and gives the CPUs back",
			run: func(ws *Waits[string]) []string {
				id := ws.Add(get("g", 1, nil, 1, 2))
				ws.Drop(id)
				if ws.Waiting(obj(1)) {
					return []string{"still waiting"}
				}
				ws.Stored(obj(1))
				ws.Stored(obj(2))
				return answers(ws.Effects())
			},
			calls: []string{"block 1", "unblock 1"},
		},
		{
			name: "a reopened answer waits again for the object that went, and blocks again",
			want: []string{"g:11", "g:11"},
			run: func(ws *Waits[string]) []string {
				ws.Add(get("g", 1, nil, 1, 2))
				ws.Stored(obj(1))
				ws.Stored(obj(2))
				first := ws.Effects()
				ws.Reopen(first[0], 0)
				if !ws.Waiting(obj(1)) || ws.Waiting(obj(2)) {
					return []string{"waits for the wrong objects"}
				}
				ws.Stored(obj(1))
				return append(answers(first), answers(ws.Effects())...)
			},
			calls: []string{"block 1", "unblock 1", "block 1", "unblock 1"},
		},
		{
			name: "a request still waiting when the worker's task ended is answered later",
			want: []string{"g:1"},
			run: func(ws *Waits[string]) []string {
				ws.Add(get("g", 1, nil, 1))
				ws.TaskEnded(1)
				ws.Stored(obj(1))
				return answers(ws.Effects())
			},
			calls: []string{"block 1", "unblock 1"},
		},
		{
			name: "an object asked for twice is ready in both places; the get waits for the rest",
			run: func(ws *Waits[string]) []string {
				ws.Add(get("g", NoWorker, nil, 1, 1, 2))
				ws.Stored(obj(1))
				ws.Stored(obj(1))
				return answers(ws.Effects())
			},
			open: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &lender{park: tt.park}
			ws := NewWaits[string](l)
			got := tt.run(ws)
			if !slices.Equal(got, tt.want) {
				t.Errorf("answers %q, want %q", got, tt.want)
			}
			if !slices.Equal(l.calls, tt.calls) {
				t.Errorf("asked the core %q, want %q", l.calls, tt.calls)
			}
			if ws.Len() != tt.open {
				t.Errorf("%d requests open at the end, want %d", ws.Len(), tt.open)
			}
			if err := ws.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}
