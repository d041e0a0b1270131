package dashboard

import (
	"bytes"
	"encoding/json"
	"path/filepath"
)

// sweep is a Tune experiment folder: experiment.json, journal.jsonl and a
// run folder per trial.
type sweep struct {
	id   string // path under the log dir
	dir  string
	meta sweepMeta

	journal tailer
	trials  []*trial
	byID    map[string]*trial
	ended   string // why stop_experiment ended the sweep, if it did
	bad     int    // malformed journal lines
}

// sweepMeta is what the dashboard reads of experiment.json.
type sweepMeta struct {
	Name       string          `json:"name"`
	Space      json.RawMessage `json:"space"`
	NumSamples int             `json:"num_samples"`
	Metric     string          `json:"metric"`
	Mode       string          `json:"mode"`
	Searcher   string          `json:"searcher"`
	Scheduler  string          `json:"scheduler"`
	// Stop is the stop criterion (tune writes it since the dashboard
	// needed it; older files lack it).
	Stop map[string]float64 `json:"stop"`
}

// trial is one trial as the journal records it.
type trial struct {
	id          string
	status      string
	config      map[string]any
	dir         string // absolute
	failures    int
	err         string
	checkpoints []string // absolute paths, oldest first
}

// journalEvent is the part of a journal line the dashboard uses.
type journalEvent struct {
	Event      string         `json:"e"`
	Trial      string         `json:"trial"`
	Config     map[string]any `json:"config"`
	Dir        string         `json:"dir"`
	Checkpoint *struct {
		Path string `json:"path"`
	} `json:"checkpoint"`
	Status   string `json:"status"`
	Failures int    `json:"failures"`
	Error    string `json:"error"`
}

// resultPrefix starts a journal line holding a result: the trial's
// result.json has the same result, so the dashboard skips these lines
// without decoding them.
var resultPrefix = []byte(`{"e":"result"`)

func newSweep(root, dir, id string) *sweep {
	s := &sweep{id: id, dir: dir, byID: map[string]*trial{}, journal: tailer{path: filepath.Join(dir, journalFile)}}
	if b, ok := readSmallFile(root, filepath.Join(dir, experimentFile), 1<<20); ok {
		_ = json.Unmarshal(b, &s.meta) // a broken file leaves the folder's name and no metric
	}
	if s.meta.Name == "" {
		s.meta.Name = filepath.Base(dir)
	}
	return s
}

// refresh reads the journal lines written since the last refresh.
func (s *sweep) refresh(root string) {
	if !fileInside(root, s.journal.path) {
		return
	}
	reset, _ := s.journal.next(s.apply)
	if reset {
		s.trials, s.byID, s.ended, s.bad = nil, map[string]*trial{}, "", 0
		s.journal = tailer{path: s.journal.path}
		_, _ = s.journal.next(s.apply)
	}
}

func (s *sweep) apply(line []byte) {
	if bytes.HasPrefix(line, resultPrefix) {
		return
	}
	var ev journalEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		s.bad++
		return
	}
	if ev.Event == "created" {
		t := &trial{id: ev.Trial, status: statusPending, config: ev.Config, dir: filepath.Join(s.dir, ev.Dir)}
		if s.byID[ev.Trial] == nil {
			s.trials = append(s.trials, t)
		}
		s.byID[ev.Trial] = t
		return
	}
	if ev.Event == "ended" {
		s.ended = ev.Error
		return
	}
	t := s.byID[ev.Trial]
	if t == nil {
		return
	}
	switch ev.Event {
	case "status":
		t.status, t.failures, t.err = ev.Status, ev.Failures, ev.Error
	case "config":
		t.config = ev.Config
	case "checkpoint":
		if ev.Checkpoint != nil {
			t.checkpoints = append(t.checkpoints, filepath.Join(s.dir, ev.Checkpoint.Path))
		}
	case "checkpoint_deleted":
		if ev.Checkpoint != nil {
			gone := filepath.Join(s.dir, ev.Checkpoint.Path)
			kept := t.checkpoints[:0]
			for _, c := range t.checkpoints {
				if c != gone {
					kept = append(kept, c)
				}
			}
			t.checkpoints = kept
		}
	}
}
