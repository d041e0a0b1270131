package dashboard

import (
	"bytes"
	"fmt"
	"io"
	"os"
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
	path    string
	off     int64
	partial []byte
	skip    bool // inside an over-long line: drop bytes up to its newline
}

// next calls fn for every complete line appended since the last call. It
// returns reset=true when the file shrank and was read from the start
// again, so the caller can drop what it derived from the old content.
func (t *tailer) next(fn func(line []byte)) (reset bool, err error) {
	f, err := os.Open(t.path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("dashboard: %w", err)
	}
	if st.Size() < t.off {
		t.off, t.partial, t.skip, reset = 0, nil, false, true
	}
	if st.Size() == t.off {
		return reset, nil
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return reset, fmt.Errorf("dashboard: %w", err)
	}
	buf := make([]byte, min(st.Size()-t.off, 64<<10))
	for {
		n, rerr := f.Read(buf)
		t.off += int64(n)
		t.feed(buf[:n], fn)
		if rerr == io.EOF || n == 0 {
			return reset, nil
		}
		if rerr != nil {
			return reset, fmt.Errorf("dashboard: reading %s: %w", t.path, rerr)
		}
	}
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
