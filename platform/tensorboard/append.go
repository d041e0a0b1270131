package tensorboard

import (
	"fmt"
	"os"
	"path/filepath"
)

// Append opens the newest event file in dir to write on at its end, so
// that a resumed run keeps one event file rather than starting another
// beside it; when dir holds none it creates one as NewWriter does. A record
// cut short at the end (by a writer killed mid-write) is dropped first.
func Append(dir string) (*Writer, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	newest, newestT := "", int64(0)
	for _, f := range files {
		st, err := os.Stat(f)
		if err == nil && st.Mode().IsRegular() && (newest == "" || st.ModTime().UnixNano() > newestT) {
			newest, newestT = f, st.ModTime().UnixNano()
		}
	}
	if newest == "" {
		return NewWriter(dir)
	}
	f, err := os.OpenFile(newest, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("tensorboard: opening %s: %w", newest, err)
	}
	w := &Writer{f: f, path: newest}
	if err := w.truncateWhere(func(Event) bool { return false }); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Truncate cuts the writer's file before the first event drop selects
// (the file-version event is never offered), so that a run restored from
// a checkpoint writes the iterations it computes again once, not twice.
func (w *Writer) Truncate(drop func(Event) bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.truncateWhere(func(ev Event) bool { return ev.FileVersion == "" && drop(ev) })
}

// truncateWhere cuts the file before its first event that drop selects, or
// before a damaged or cut-short record, and moves the write offset to the
// new end. The caller holds w.mu (or owns w alone).
func (w *Writer) truncateWhere(drop func(Event) bool) error {
	if w.f == nil {
		return fmt.Errorf("tensorboard: truncate of closed writer %s", w.path)
	}
	b, err := os.ReadFile(w.path)
	if err != nil {
		return fmt.Errorf("tensorboard: %w", err)
	}
	end, _ := eachRecord(b, func(_ int, ev Event) bool { return !drop(ev) })
	if end < len(b) {
		if err := w.f.Truncate(int64(end)); err != nil {
			return fmt.Errorf("tensorboard: truncating %s: %w", w.path, err)
		}
	}
	if _, err := w.f.Seek(int64(end), 0); err != nil {
		return fmt.Errorf("tensorboard: %s: %w", w.path, err)
	}
	return nil
}
