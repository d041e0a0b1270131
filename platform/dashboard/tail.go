package dashboard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// maxLine bounds one JSON line of a tailed file; a longer line is skipped
// (counted as malformed) rather than held in memory.
const maxLine = 8 << 20

// tailer reads a file that only grows by whole-line appends: each call to
// next reads what was added since the last one, never the whole file
// again. A line without its newline yet (a writer mid-write) waits for the
// next call. A file that shrank (rewritten, truncated by a resumed trial)
// is read again from its start, and reset reports so.
type tailer struct {
	// root, when set, is the folder the file must stay inside: the path
	// is resolved on every read, so a link swapped in after indexing is
	// refused rather than followed.
	root    string
	path    string
	off     int64
	partial []byte
	skip    bool  // inside an over-long line: drop bytes up to its newline
	limit   int64 // when > 0, bytes past this offset are not read
}

// next calls fn for every complete line appended since the last call. It
// returns reset=true when the file shrank and was read from the start
// again, so the caller can drop what it derived from the old content.
func (t *tailer) next(fn func(line []byte)) (reset bool, err error) {
	f, err := t.open()
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	size := st.Size()
	if size < t.off {
		t.off, t.partial, t.skip, reset = 0, nil, false, true
	}
	if t.limit > 0 {
		size = min(size, t.limit)
	}
	if size <= t.off {
		return reset, nil
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return reset, err
	}
	in := io.LimitReader(f, size-t.off)
	buf := make([]byte, min(size-t.off, 64<<10))
	for {
		n, rerr := in.Read(buf)
		t.off += int64(n)
		t.feed(buf[:n], fn)
		if rerr == io.EOF || n == 0 {
			return reset, nil
		}
		if rerr != nil {
			return reset, fmt.Errorf("reading %s: %w", t.path, rerr)
		}
	}
}

// errOutside is the error for a file that resolves outside the log dir.
var errOutside = errors.New("the file is not inside the log dir (a link leads out of it)")

// open opens the file, refusing it when it is a link or lies in a folder
// that resolves outside root.
func (t *tailer) open() (*os.File, error) {
	if t.root == "" {
		return os.Open(t.path)
	}
	real, err := filepath.EvalSymlinks(t.path)
	if err != nil {
		return nil, err
	}
	if !within(t.root, real) {
		return nil, fmt.Errorf("%s: %w", t.path, errOutside)
	}
	// O_NOFOLLOW: a link put in place of the file since it was resolved
	// fails to open instead of being read.
	return os.OpenFile(real, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}

func (t *tailer) feed(b []byte, fn func([]byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !t.skip {
				t.partial = append(t.partial, b...)
				if len(t.partial) > maxLine {
					t.partial, t.skip = nil, true
				}
			}
			return
		}
		if t.skip {
			t.skip = false
		} else if len(t.partial) > 0 {
			t.partial = append(t.partial, b[:i]...)
			fn(t.partial)
			t.partial = t.partial[:0]
		} else {
			fn(b[:i])
		}
		b = b[i+1:]
	}
}

// copyLimited copies at most limit bytes and fails beyond them.
func copyLimited(w io.Writer, r io.Reader, limit int64) (int64, error) {
	n, err := io.Copy(w, io.LimitReader(r, limit+1))
	if err == nil && n > limit {
		return n, fmt.Errorf("more than %d bytes", limit)
	}
	return n, err
}
