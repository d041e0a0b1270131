package resubmit

import (
	"slices"
	"testing"

	"github.com/gray-ml/gray/runtime/task"
)

// facts answers from its fields and writes down what was asked, so the
// table also shows which questions (some cost the shell a scan) a
// submission gets to.
type facts struct {
	actorExists, constructing, stored, lost, rebuilding, here, again, held, logged bool
	asked                                                                          []string
}

func (f *facts) ask(q string, v bool) bool { f.asked = append(f.asked, q); return v }
func (f *facts) ActorExists() bool         { return f.ask("exists", f.actorExists) }
func (f *facts) Constructing() bool        { return f.ask("constructing", f.constructing) }
func (f *facts) Stored() (bool, bool)      { f.ask("stored", f.stored); return f.stored, f.lost }
func (f *facts) Rebuilding() bool          { return f.ask("rebuilding", f.rebuilding) }
func (f *facts) TargetHere() bool          { return f.ask("here", f.here) }
func (f *facts) Again() bool               { return f.ask("again", f.again) }
func (f *facts) Held() bool                { return f.ask("held", f.held) }
func (f *facts) Logged() bool              { return f.ask("logged", f.logged) }
func (v Verdict) String() string           { return [...]string{"new", "repeat", "constructed", "gone"}[v] }
func asked(qs ...string) []string          { return qs }

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  task.Kind
		facts facts
		want  Verdict
		asked []string
	}{
		{"a first creation is new", task.KindActorCreate, facts{}, New, asked("exists")},
		{"a creation whose actor still constructs is a repeat", task.KindActorCreate,
			facts{actorExists: true, constructing: true}, Repeat, asked("exists", "constructing")},
		{"a creation whose actor ran its constructor: its claims go", task.KindActorCreate,
			facts{actorExists: true}, Constructed, asked("exists", "constructing")},
		{"a task not stored and not rebuilding is new", task.KindFunc, facts{}, New, asked("stored", "rebuilding")},
		{"a task whose result is stored ran", task.KindFunc, facts{stored: true}, Repeat, asked("stored")},
		{"a task whose result was lost and is stored as lost ran", task.KindFunc, facts{stored: true, lost: true}, Repeat, asked("stored")},
		{"a task being rebuilt runs now", task.KindFunc, facts{rebuilding: true}, Repeat, asked("stored", "rebuilding")},
		{"a call whose result is stored ran", task.KindActorMethod, facts{stored: true}, Repeat, asked("stored")},
		{"a call to an actor elsewhere is new", task.KindActorMethod, facts{again: true, held: true}, New, asked("stored", "here")},
		{"a call made by a first run is new, unscanned", task.KindActorMethod, facts{here: true, held: true}, New, asked("stored", "here", "again")},
		{"a call its target holds already is a repeat", task.KindActorMethod,
			facts{here: true, again: true, held: true}, Repeat, asked("stored", "here", "again", "held")},
		{"a call that ran, result freed since: gone, not made twice", task.KindActorMethod,
			facts{here: true, again: true, logged: true}, Gone, asked("stored", "here", "again", "held", "logged")},
		{"a call that ran, result lost and stored so: repeat", task.KindActorMethod,
			facts{stored: true, lost: true, here: true, again: true, logged: true}, Repeat, asked("stored", "here", "again", "held", "logged")},
		{"a call whose result was lost, not in the log: made again", task.KindActorMethod,
			facts{stored: true, lost: true, here: true, again: true}, New, asked("stored", "here", "again", "held", "logged")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.facts
			if got := Decide(tc.kind, &f); got != tc.want {
				t.Errorf("Decide = %v, want %v", got, tc.want)
			}
			if !slices.Equal(f.asked, tc.asked) {
				t.Errorf("asked %q, want %q", f.asked, tc.asked)
			}
		})
	}
}
