//go:build linux

package wire

import (
	"bufio"
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"
)

// pair makes a host view and a plugin view of one region, the plugin's
// mapped from the file as a plugin process would.
func pair(t *testing.T, reqCap, ansCap int, spin time.Duration) (host, plug *Shared) {
	t.Helper()
	host, f, err := CreateShared(reqCap, ansCap, spin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plug, err = MapShared(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close(); plug.Close() })
	return host, plug
}

// serve answers every request with obs = actions × 2, one reward per
// action, until the host closes.
func serve(plug *Shared, done chan<- error) {
	w := FastWriter{W: plug}
	r := FastReader{R: bufio.NewReaderSize(nil, 1<<10)}
	var acts []float64
	for {
		rd, err := plug.Wait(nil)
		if err != nil {
			done <- err
			return
		}
		r.R.Reset(rd)
		if acts, err = r.ReadRequestInto(acts); err != nil {
			done <- err
			return
		}
		if len(acts) > 0 && acts[0] < 0 {
			err = w.WriteError("negative action")
		} else {
			obs := make([]float64, len(acts))
			for i, a := range acts {
				obs[i] = 2 * a
			}
			term := make([]bool, len(acts))
			err = w.WriteAnswer(obs, acts, term, term, nil)
		}
		if err != nil {
			done <- err
			return
		}
	}
}

// TestSharedRoundTrip sends batches of every size through the region, with
// and without spinning (the sleeping path then carries every frame), past
// the sequence words' wrap-around, and checks errors and the close.
func TestSharedRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name string
		spin time.Duration
		seq  uint32
	}{
		{"spin", DefaultSpin, 0},
		{"sleep", 0, 0},
		{"wrap", DefaultSpin, math.MaxUint32 - 5},
		{"wrap-sleep", 0, math.MaxUint32 - 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			const maxN = 64
			host, f, err := CreateShared(4+8*maxN, 13+17*maxN, c.spin)
			if err != nil {
				t.Fatal(err)
			}
			host.mine.Store(c.seq)
			host.theirs.Store(c.seq)
			host.seen = c.seq
			plug, err := MapShared(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go serve(plug, done)
			w := FastWriter{W: host}
			r := FastReader{R: bufio.NewReaderSize(nil, 1<<10)}
			for i := 0; i < 50; i++ {
				n := 1 + i%maxN
				if i%7 == 0 {
					n = maxN
				}
				acts := make([]float64, n)
				for j := range acts {
					acts[j] = float64(i + j)
				}
				if err := w.WriteRequest(acts); err != nil {
					t.Fatal(err)
				}
				rd, err := host.Wait(nil)
				if err != nil {
					t.Fatal(err)
				}
				r.R.Reset(rd)
				var a FastAnswer
				if err := r.ReadAnswerInto(&a); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if !reflect.DeepEqual(a.Rewards, acts) || len(a.Obs) != n || a.Obs[n-1] != 2*acts[n-1] {
					t.Fatalf("step %d: answer %+v for actions %v", i, a, acts)
				}
			}
			if c.seq != 0 && host.mine.Load() >= c.seq {
				t.Fatalf("sequence word %d did not wrap", host.mine.Load())
			}
			// A step error arrives as ErrFastStep.
			if err := w.WriteRequest([]float64{-1}); err != nil {
				t.Fatal(err)
			}
			rd, err := host.Wait(nil)
			if err != nil {
				t.Fatal(err)
			}
			r.R.Reset(rd)
			var se *ErrFastStep
			if err := r.ReadAnswerInto(&FastAnswer{}); !errors.As(err, &se) || se.Msg != "negative action" {
				t.Fatalf("error answer: %v", err)
			}
			// A request beyond the region is refused, not truncated.
			if err := w.WriteRequest(make([]float64, maxN+1)); !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("oversized request: %v, want ErrFrameTooLarge", err)
			}
			host.Close()
			select {
			case err := <-done:
				if !errors.Is(err, ErrShmClosed) {
					t.Fatalf("plugin loop ended with %v, want ErrShmClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("plugin loop did not notice the close")
			}
			plug.Close()
		})
	}
}

// TestSharedWaitAlive: a side waiting for a frame that never comes (the
// other process died) returns its liveness check's error.
func TestSharedWaitAlive(t *testing.T) {
	for _, spin := range []time.Duration{0, DefaultSpin} {
		host, _ := pair(t, 64, 64, spin)
		host.Slice = time.Millisecond
		dead := errors.New("plugin died")
		var mu sync.Mutex
		checks := 0
		_, err := host.Wait(func() error {
			mu.Lock()
			defer mu.Unlock()
			if checks++; checks == 3 {
				return dead
			}
			return nil
		})
		if !errors.Is(err, dead) || checks != 3 {
			t.Fatalf("spin %v: Wait = %v after %d checks, want the alive error after 3", spin, err, checks)
		}
	}
}

func TestMapSharedRejectsGarbage(t *testing.T) {
	host, f, err := CreateShared(8, 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	host.mem[offMagic] = 0
	if _, err := MapShared(f); err == nil {
		t.Fatal("MapShared accepted a region without the magic word")
	}
	host.Close()
}
