package tune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"
)

func stepOp(ctx context.Context, tr Trainable, saveDir string, ev *opEvent) {
	start := time.Now()
	res, err := tr.Step(ctx)
	ev.dur = time.Since(start).Seconds()
	switch {
	case errors.Is(err, ErrTrainableDone):
		ev.kind = evkDone
		return
	case err != nil:
		ev.kind, ev.err = evkError, err
		return
	case res == nil:
		ev.kind, ev.err = evkError, errors.New("Step returned a nil result")
		return
	}
	ev.kind, ev.result = evkResult, res
	if saveDir != "" {
		if err := saveTo(ctx, tr, saveDir); err != nil {
			ev.kind, ev.err = evkError, err
			return
		}
		ev.ckpt = &Checkpoint{Path: saveDir}
	}
}

func saveTo(ctx context.Context, tr Trainable, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint folder: %w", err)
	}
	if err := tr.Save(ctx, dir); err != nil {
		return fmt.Errorf("saving checkpoint: %w", err)
	}
	return nil
}

// saveDirFor returns the checkpoint folder for iteration it when the
// checkpoint frequency asks for one there, else "".
func (r *runner) saveDirFor(t *Trial, it int) string {
	if r.exp.CheckpointFreq > 0 && it%r.exp.CheckpointFreq == 0 {
		return r.checkpointDir(t, it)
	}
	return ""
}

func (r *runner) checkpointDir(t *Trial, it int) string {
	return filepath.Join(t.Dir, fmt.Sprintf("checkpoint_%06d", it))
}

// dispatchStop saves (into saveDir, if set) and stops t's trainable.
func (r *runner) dispatchStop(t *Trial, saveDir string) {
	t.busy = true
	r.inflight++
	tr := t.trainable
	t.trainable = nil
	go func() {
		ev := opEvent{t: t, kind: evkStopped}
		if saveDir != "" && tr != nil {
			if err := saveTo(r.ctx, tr, saveDir); err != nil {
				ev.kind, ev.err = evkError, err
			} else {
				ev.ckpt = &Checkpoint{Path: saveDir}
			}
		}
		if tr != nil {
			if err := tr.Stop(); err != nil && ev.err == nil {
				ev.kind, ev.err = evkError, fmt.Errorf("stop: %w", err)
			}
		}
		r.events <- ev
	}()
}

func (r *runner) addCheckpoint(t *Trial, path string) Checkpoint {
	cp := Checkpoint{Path: path, Iteration: t.Iteration, TimeTotal: t.TimeTotal}
	attr := r.exp.CheckpointScoreAttr
	if attr == "" {
		cp.Score = float64(t.Iteration)
	} else if v, ok := ResultFloat(t.LastResult, attr); ok {
		cp.Score = r.exp.Mode.score(v)
	}
	if n := len(t.Checkpoints); n > 0 && t.Checkpoints[n-1].Path == path {
		t.Checkpoints[n-1] = cp
	} else {
		t.Checkpoints = append(t.Checkpoints, cp)
	}
	rec := cp
	rec.Path = r.rel(path)
	r.record(journalEvent{Event: evCheckpoint, Trial: t.ID, Checkpoint: &rec})
	r.pruneCheckpoints(t)
	return cp
}

// pruneCheckpoints keeps the best KeepCheckpointsNum, never the newest.
func (r *runner) pruneCheckpoints(t *Trial) {
	k := r.exp.KeepCheckpointsNum
	if k <= 0 || len(t.Checkpoints) <= k {
		return
	}
	newest := t.Checkpoints[len(t.Checkpoints)-1]
	rest := append([]Checkpoint(nil), t.Checkpoints[:len(t.Checkpoints)-1]...)
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].Score > rest[j].Score })
	keep := map[string]bool{newest.Path: true}
	for i := 0; i < len(rest) && len(keep) < k; i++ {
		keep[rest[i].Path] = true
	}
	var kept []Checkpoint
	for _, c := range t.Checkpoints {
		if keep[c.Path] {
			kept = append(kept, c)
			continue
		}
		_ = os.RemoveAll(c.Path)
		rec := c
		rec.Path = r.rel(c.Path)
		r.record(journalEvent{Event: evCheckpointGone, Trial: t.ID, Checkpoint: &rec})
	}
	t.Checkpoints = kept
}

func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
