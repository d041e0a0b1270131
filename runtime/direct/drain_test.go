package direct

import "testing"

// stopping: the actor on On is dead and its process is to stop (Released:
// no handle to it remains).
type stopping struct {
	On       string
	Released bool
}

func (stopping) event() {}

// TestDrain: a released actor whose address callers were given is
// drained, so a call of theirs on the wire runs; every other stop is at
// once, and the actor's entry goes in every case.
func TestDrain(t *testing.T) {
	// called: caller a was given b's address.
	called := []step{
		{ask{Caller: "a", Req: 1, On: "b", Up: true, Built: true}, []string{"listen b"}},
		{listening{W: "b", Addr: "/b.sock", Hosts: true, Built: true}, []string{"addr a#1: /b.sock"}},
	}
	with := func(steps ...step) []step { return append(append([]step(nil), called...), steps...) }
	runAll(t, []tcase{
		{"released with direct callers: drained", with(
			// Release: it no longer takes direct callers, nor forgets them.
			step{changed{On: "b", Up: true, Built: true}, nil},
			step{callers{1}, nil},
			step{stopping{On: "b", Released: true}, []string{"drain b"}},
			step{callers{0}, nil},
			// Once only: the entry went.
			step{stopping{On: "b", Released: true}, nil},
		)},
		{"killed with direct callers: stopped at once", with(
			step{changed{On: "b", Up: true, Built: true}, nil},
			step{stopping{On: "b"}, nil},
			step{callers{0}, nil},
		)},
		{"released, its process already ended", with(
			step{changed{On: "b", Up: true, Built: true}, nil},
			step{die{W: "b"}, nil},
			step{stopping{On: "b", Released: true}, nil},
		)},
		{"released without direct callers", []step{
			{ask{Caller: "a", Req: 1, On: "b", Up: true}, []string{"listen b"}},
			{changed{On: "b", Up: true}, []string{"addr a#1: through the driver"}},
			{stopping{On: "b", Released: true}, nil},
		}},
		{"released, its callers all sent through the driver", []step{
			{ask{Caller: "A", Req: 1, On: "b", Up: true, Built: true}, []string{"listen b"}},
			{listening{W: "b", Addr: "/b.sock", Hosts: true, Built: true}, []string{"addr A#1: through the driver"}},
			{stopping{On: "b", Released: true}, nil},
		}},
		{"released, never asked about", []step{
			{stopping{On: "b", Released: true}, nil},
		}},
	})
}
