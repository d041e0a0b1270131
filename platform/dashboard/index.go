package dashboard

import (
	"path/filepath"
	"sync"
	"time"
)

// index is what the dashboard knows of the log dir. It is brought up to
// date on demand, at most once per interval, by reading only what files
// gained since the last look.
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
}

func newIndex(root string, interval time.Duration) *index {
	return &index{
		root: root, interval: interval, rescan: 4 * interval,
		runs: map[string]*run{}, sweeps: map[string]*sweep{},
	}
}

// update brings the index up to date unless it was looked at less than
// the interval ago. The caller holds x.mu.
func (x *index) update(now time.Time) {
	if now.Sub(x.lastLook) < x.interval {
		return
	}
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
		if r.size != size || !r.mtime.Equal(mtime) {
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
