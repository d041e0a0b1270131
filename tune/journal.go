package tune

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The experiment folder holds experiment.json (written once), journal.jsonl
// (appended one event per line, never rewritten) and one run folder per
// trial. Every event is written with one write(2) call on an O_APPEND file,
// so a process killed with SIGKILL loses nothing that was written: the
// page cache outlives the process. A torn last line (power loss) is
// ignored when reading.
const (
	experimentFile = "experiment.json"
	journalFile    = "journal.jsonl"
	formatVersion  = "gray-tune/1"
)

// experimentMeta is experiment.json.
type experimentMeta struct {
	Format     string          `json:"format"`
	Name       string          `json:"name"`
	Space      json.RawMessage `json:"space"`
	NumSamples int             `json:"num_samples"`
	Metric     string          `json:"metric,omitempty"`
	Mode       Mode            `json:"mode,omitempty"`
	Searcher   string          `json:"searcher"`
	Scheduler  string          `json:"scheduler"`
	// Stop is the experiment's stop criterion, so that readers (the
	// dashboard) can tell a trial that met it from one a scheduler cut.
	Stop    map[string]float64 `json:"stop,omitempty"`
	Created time.Time          `json:"created"`
}

// Journal event kinds.
const (
	evCreated        = "created"
	evResult         = "result"
	evCheckpoint     = "checkpoint"
	evCheckpointGone = "checkpoint_deleted"
	evStatus         = "status"
	evConfig         = "config"
	evFlush          = "flush"
	evEnded          = "ended" // StopExperiment met; Error says by what
	// evRestored: the trial (re)starts from Checkpoint (after a failure, a
	// pause or a PBT exploit); resume ignores it.
	evRestored = "restored"
)

// journalEvent is one line of journal.jsonl.
type journalEvent struct {
	Event      string         `json:"e"`
	Trial      string         `json:"trial"`
	Config     map[string]any `json:"config,omitempty"`
	Dir        string         `json:"dir,omitempty"`
	Resources  *Resources     `json:"resources,omitempty"`
	Result     map[string]any `json:"result,omitempty"`
	Checkpoint *Checkpoint    `json:"checkpoint,omitempty"`
	Status     Status         `json:"status,omitempty"`
	Failures   int            `json:"failures,omitempty"`
	Error      string         `json:"error,omitempty"`
	Time       float64        `json:"t,omitempty"`
}

type journal struct {
	f   *os.File
	buf bytes.Buffer
}

func openJournal(dir string) (*journal, error) {
	f, err := os.OpenFile(filepath.Join(dir, journalFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tune: opening the experiment journal: %w", err)
	}
	if err := lockJournal(f, dir); err != nil {
		f.Close()
		return nil, err
	}
	return &journal{f: f}, nil
}

// append writes one event with a single write call.
func (j *journal) append(ev journalEvent) error {
	j.buf.Reset()
	enc := json.NewEncoder(&j.buf)
	if err := enc.Encode(ev); err != nil {
		return fmt.Errorf("tune: journal event for trial %s is not JSON: %w", ev.Trial, err)
	}
	if _, err := j.f.Write(j.buf.Bytes()); err != nil {
		return fmt.Errorf("tune: writing the experiment journal: %w", err)
	}
	return nil
}

func (j *journal) close() error { return j.f.Close() }

// readJournal calls fn for every complete event in order, streaming, so
// memory stays bounded whatever the journal's length. A corrupt line is an
// error unless it is the last one (a write torn by a crash).
func readJournal(dir string, fn func(journalEvent) error) error {
	f, err := os.Open(filepath.Join(dir, journalFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tune: reading the experiment journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	line := 0
	var pendingErr error
	for sc.Scan() {
		line++
		if pendingErr != nil {
			return pendingErr // a bad line that was not the last one
		}
		var ev journalEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			pendingErr = fmt.Errorf("tune: %s line %d is corrupt: %w", filepath.Join(dir, journalFile), line, err)
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("tune: reading the experiment journal: %w", err)
	}
	return nil
}

func readMeta(dir string) (*experimentMeta, error) {
	b, err := os.ReadFile(filepath.Join(dir, experimentFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("tune: %s is not a tune experiment folder (it has no %s); give the folder a sweep wrote, or start a new experiment without resume",
			dir, experimentFile)
	}
	if err != nil {
		return nil, fmt.Errorf("tune: reading %s: %w", experimentFile, err)
	}
	var m experimentMeta
	if err := json.Unmarshal(b, &m); err != nil || m.Format != formatVersion {
		return nil, fmt.Errorf("tune: %s in %s is not a %s experiment file", experimentFile, dir, formatVersion)
	}
	return &m, nil
}

func writeMeta(dir string, m *experimentMeta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, experimentFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("tune: writing %s: %w", experimentFile, err)
	}
	return os.Rename(tmp, filepath.Join(dir, experimentFile))
}

// TrialSummary is a trial as recorded in an experiment folder.
type TrialSummary struct {
	ID          string
	Status      Status
	Config      map[string]any
	Dir         string
	LastResult  map[string]any
	Iteration   int
	Failures    int
	Error       string
	Checkpoints []Checkpoint
}

// LoadTrials reads an experiment folder's journal into one summary per
// trial, in creation order.
func LoadTrials(dir string) ([]*TrialSummary, error) {
	if _, err := readMeta(dir); err != nil {
		return nil, err
	}
	var out []*TrialSummary
	byID := map[string]*TrialSummary{}
	err := readJournal(dir, func(ev journalEvent) error {
		if ev.Event == evCreated {
			s := &TrialSummary{ID: ev.Trial, Status: Pending, Config: ev.Config, Dir: filepath.Join(dir, ev.Dir)}
			byID[ev.Trial] = s
			out = append(out, s)
			return nil
		}
		s := byID[ev.Trial]
		if s == nil {
			return nil
		}
		switch ev.Event {
		case evResult:
			s.LastResult = ev.Result
			if it, ok := ResultFloat(ev.Result, "training_iteration"); ok {
				s.Iteration = int(it)
			}
		case evCheckpoint:
			cp := *ev.Checkpoint
			cp.Path = filepath.Join(dir, cp.Path)
			s.Checkpoints = append(s.Checkpoints, cp)
		case evCheckpointGone:
			s.Checkpoints = removeCheckpoint(s.Checkpoints, filepath.Join(dir, ev.Checkpoint.Path))
		case evStatus:
			s.Status, s.Failures, s.Error = ev.Status, ev.Failures, ev.Error
		case evConfig:
			s.Config = ev.Config
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func removeCheckpoint(cps []Checkpoint, path string) []Checkpoint {
	out := cps[:0]
	for _, c := range cps {
		if c.Path != path {
			out = append(out, c)
		}
	}
	return out
}
