package direct

import "testing"

// stopping: the actor on On is dead and its process is to stop (Released:
// no handle to it remains).
type stopping struct {
	On       string
	Released bool
}

// dialed: caller Caller dialled the actor's address (Dialed).
type dialed struct{ Caller string }

func (stopping) event() {}
func (dialed) event()   {}

// TestDrain: a released actor whose address callers were given is
// drained, so a call of theirs on the wire runs, once each of those
// callers dialled the address or died (a worker knows only the callers
// connected to it); every other stop is at once, and the actor's entry
// goes in every case.
func TestDrain(t *testing.T) {
	// called: caller a was given b's address.
	called := []step{
		{ask{Caller: "a", Req: 1, On: "b", Up: true, Built: true}, []string{"listen b"}},
		{listening{W: "b", Addr: "/b.sock", Hosts: true, Built: true}, []string{"addr a#1: /b.sock"}},
	}
	with := func(steps ...step) []step { return append(append([]step(nil), called...), steps...) }
	runAll(t, []tcase{
		{"released with direct callers, all dialled: drained", with(
			step{dialed{Caller: "a"}, nil},
			// Release: it no longer takes direct callers, nor forgets them.
			step{changed{On: "b", Up: true, Built: true}, nil},
			step{callers{1}, nil},
			step{stopping{On: "b", Released: true}, []string{"drain b"}},
			step{callers{0}, nil},
			// Once only: the entry went.
			step{stopping{On: "b", Released: true}, nil},
		)},
		// The window session 14 left: a caller given the address that
		// had not connected when the drain reached the worker was
		// refused, and its calls failed. Now the drain waits for it.
		{"a caller dials only after the release: drained then", with(
			step{changed{On: "b", Up: true, Built: true}, nil},
			step{stopping{On: "b", Released: true}, []string{"drain later b"}},
			step{callers{0}, nil},
			step{dialed{Caller: "a"}, []string{"drain b"}},
			step{dialed{Caller: "a"}, nil},
			step{stopping{On: "b", Released: true}, nil},
		)},
		{"a caller dies before it dials: drained, not waited for", with(
			step{changed{On: "b", Up: true, Built: true}, nil},
			step{stopping{On: "b", Released: true}, []string{"drain later b"}},
			step{die{W: "a"}, nil},
			step{gone{W: "a"}, []string{"drain b"}},
		)},
		{"a caller dead before the release is not waited for", with(
			step{changed{On: "b", Up: true, Built: true}, nil},
			step{die{W: "a"}, nil},
			step{stopping{On: "b", Released: true}, []string{"drain b"}},
		)},
		{"two callers: one dials, one dies", with(
			step{ask{Caller: "c", Req: 1, On: "b", Up: true, Built: true}, []string{"addr c#1: /b.sock"}},
			step{changed{On: "b", Up: true, Built: true}, nil},
			step{stopping{On: "b", Released: true}, []string{"drain later b"}},
			step{dialed{Caller: "c"}, nil},
			step{gone{W: "x"}, nil}, // another worker's end changes nothing
			step{die{W: "a"}, nil},
			step{gone{W: "a"}, []string{"drain b"}},
		)},
		{"a caller given the address twice is waited for until it dialled twice", with(
			step{ask{Caller: "a", Req: 2, On: "b", Up: true, Built: true}, []string{"addr a#2: /b.sock"}},
			step{callers{1}, nil},
			step{dialed{Caller: "a"}, nil},
			step{changed{On: "b", Up: true, Built: true}, nil},
			step{stopping{On: "b", Released: true}, []string{"drain later b"}},
			step{dialed{Caller: "a"}, []string{"drain b"}},
		)},
		{"a caller on another machine (TCP) is waited for too", []step{
			{ask{Caller: "A", Req: 1, On: "b", Up: true, Built: true}, []string{"listen b"}},
			{listening{W: "b", Addr: "/b.sock tcp:10.0.0.1:7000", Hosts: true, Built: true}, []string{"addr A#1: tcp:10.0.0.1:7000"}},
			{changed{On: "b", Up: true, Built: true}, nil},
			{stopping{On: "b", Released: true}, []string{"drain later b"}},
			{dialed{Caller: "A"}, []string{"drain b"}},
		}},
		{"its process ends while the drain waits: nothing to drain", with(
			step{changed{On: "b", Up: true, Built: true}, nil},
			step{stopping{On: "b", Released: true}, []string{"drain later b"}},
			step{die{W: "b"}, nil},
			step{gone{W: "b"}, nil},
			step{dialed{Caller: "a"}, nil},
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
			{dialed{Caller: "a"}, nil}, // (a caller sent through the driver dials nothing)
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
