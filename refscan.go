package gray

import (
	"reflect"
	"runtime"

	"github.com/gray-ml/gray/runtime/refscan"
	"github.com/gray-ml/gray/runtime/task"
)

// References carried inside values.
//
// A Ref encoded into a value (a struct field, a slice or map of Refs) keeps
// its object alive for as long as something may decode it:
//
//   - an object whose value holds references (Put, a task's result) holds
//     each of them until the object itself is freed;
//   - a task argument whose value holds references is held by the task's
//     first return object, so at least until the task ends;
//   - a process that decodes a reference out of a value holds the object
//     until that decoded reference is collected, as for any Ref.
//
// Local mode (Options.Local) keeps the simpler rule: an encoded reference
// keeps its object for the session.

// refs finds the references inside values (runtime/refscan): a Ref of a
// session that has not failed names its object.
var refs = refscan.New(reflect.TypeFor[AnyRef](), func(v any) (ObjectID, bool) {
	r, ok := v.(AnyRef)
	if !ok || r == nil || r.session() == nil || r.failure() != nil {
		return ObjectID{}, false
	}
	return r.ID(), true
})

// refsIn returns the IDs of the references the codec would encode inside
// v, or nil when there are none.
func refsIn(v any) []ObjectID { return refs.Find(v) }

// containRefs tells the backend which objects the value v of object id
// refers to, before it is stored. It reports whether v holds any.
func containRefs(s *session, id ObjectID, v any) bool {
	if !s.tracksNested() {
		return false
	}
	children := refsIn(v)
	if len(children) == 0 {
		return false
	}
	s.nested.Contain(id, children)
	runtime.KeepAlive(v) // the references inside stay held until the claim is sent
	return true
}

// containResult is containRefs for return value i of the running task.
func containResult(sink task.ResultSink, i int, v any) {
	if children := refsIn(v); len(children) > 0 {
		sink.ContainResult(i, children)
	}
	runtime.KeepAlive(v)
}

// tracksNested reports whether the session's backend tracks references
// inside values, so an encoded reference need not keep its object for the
// session: all but local mode do.
func (s *session) tracksNested() bool { return s.nested != nil }

// sharedDir is the shared-memory store's directory, "" without one: then
// every value is encoded inline (encodeLarge).
func (s *session) sharedDir() string {
	if s.store == nil {
		return ""
	}
	return s.store.SharedDir()
}

// holdArgRefs makes the first return object of c's task hold the objects
// named inside argument value v: the task's worker decodes them (and holds
// them itself) before it reports the result, and the claim ends when that
// result is freed, so they stay valid while the task runs. An actor's
// creation stores no result: the node ends its claim once the constructor
// has run.
func holdArgRefs(c *call, v any) {
	containRefs(c.s, c.spec.Return(0), v)
}
