package dashboard

import (
	"context"
	"path/filepath"
	"sync"
	"time"
)

// index is what the dashboard knows of the log dir. It is brought up to
// date at most once per interval, by reading only what files gained since
// the last look: by its watcher while the server runs (so a request only
// reads what the last look found), else on demand by the request.
type index struct {
	root     string
	interval time.Duration // least time between two looks at the files
	rescan   time.Duration // least time between two listings of the folders

	mu         sync.Mutex
	runs       map[string]*run
	runOrder   []*run
	sweeps     map[string]*sweep
	sweepOrder []*sweep
	lastLook   time.Time
	lastScan   time.Time
	version    uint64 // grows whenever something the pages show changed
	watched    bool   // a watcher keeps the index current: requests do not look
}

func newIndex(root string, interval time.Duration) *index {
	return &index{
		root: root, interval: interval, rescan: 4 * interval,
		runs: map[string]*run{}, sweeps: map[string]*sweep{},
	}
}

// watch looks at the files every interval until ctx ends, so that the
// look (a stat of every run's file, a listing of the folders now and
// then) is off the requests' path. Requests still check the one run they
// read (run.present), so a folder deleted or swapped for a link since the
// last look is refused, not served.
func (x *index) watch(ctx context.Context) {
	x.mu.Lock()
	x.watched = true
	x.look(time.Now())
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		x.watched = false
		x.mu.Unlock()
	}()
	tick := time.NewTicker(x.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			x.mu.Lock()
			x.look(now)
			x.mu.Unlock()
		}
	}
}

// current brings the index up to date when no watcher does. The caller
// holds x.mu.
func (x *index) current(now time.Time) {
	if !x.watched {
		x.update(now)
	}
}

// update brings the index up to date unless it was looked at less than
// the interval ago. The caller holds x.mu.
func (x *index) update(now time.Time) {
	if now.Sub(x.lastLook) < x.interval {
		return
	}
	x.look(now)
}

// look brings the index up to date: new folders (at most every rescan),
// what each run's and sweep's files gained, runs and sweeps gone. The
// caller holds x.mu.
func (x *index) look(now time.Time) {
	x.lastLook = now
	changed := false
	if now.Sub(x.lastScan) >= x.rescan {
		x.lastScan = now
		changed = x.scan()
	}
	kept := x.runOrder[:0]
	for _, r := range x.runOrder {
		size, mtime := r.size, r.mtime
		if !r.refresh() {
			// Deleted, or swapped for a link out of the log dir: forget it
			// (a later scan adds it again if it comes back).
			delete(x.runs, r.id)
			changed = true
			continue
		}
		kept = append(kept, r)
		// A run that stops writing turns from running to stopped with no
		// change to its file: that is news to the pages too.
		if st := r.status(now); r.size != size || !r.mtime.Equal(mtime) || st != r.shown {
			r.shown = st
			changed = true
		}
	}
	clear(x.runOrder[len(kept):])
	x.runOrder = kept
	sweeps := x.sweepOrder[:0]
	for _, s := range x.sweepOrder {
		if !fileInside(x.root, filepath.Join(s.dir, experimentFile)) {
			delete(x.sweeps, s.id)
			changed = true
			continue
		}
		sweeps = append(sweeps, s)
		off := s.journal.off
		s.refresh(x.root)
		if s.journal.off != off {
			changed = true
		}
	}
	clear(x.sweepOrder[len(sweeps):])
	x.sweepOrder = sweeps
	if changed {
		x.version++
	}
}

// scan lists the folders and adds the runs and sweeps that appeared.
func (x *index) scan() bool {
	runs, sweeps := scanRuns(x.root)
	added := false
	for _, f := range runs {
		if x.runs[f.rel] != nil {
			continue
		}
		r := newRun(x.root, f.dir, f.rel)
		if f.tf {
			r = newTFRun(x.root, f.dir, f.rel)
		}
		x.runs[f.rel] = r
		x.runOrder = append(x.runOrder, r)
		added = true
	}
	for _, f := range sweeps {
		if x.sweeps[f.rel] != nil {
			continue
		}
		s := newSweep(x.root, f.dir, f.rel)
		x.sweeps[f.rel] = s
		x.sweepOrder = append(x.sweepOrder, s)
		added = true
	}
	return added
}

func baseName(rel string) string {
	for i := len(rel) - 1; i >= 0; i-- {
		if rel[i] == '/' {
			return rel[i+1:]
		}
	}
	if rel == "" {
		return "."
	}
	return rel
}

func parentName(rel string) string {
	for i := len(rel) - 1; i >= 0; i-- {
		if rel[i] == '/' {
			return rel[:i]
		}
	}
	return ""
}
