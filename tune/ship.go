package tune

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Checkpoints and run-folder files travel between the driver and a trial's
// actor as tar archives: a checkpoint folder is written by the trainable
// on the actor's node, packed, sent back as Save's reply and unpacked into
// the trial's folder on the driver, which stays the one copy that counts;
// Restore sends the driver's folder the other way. Uncompressed: weights
// hardly compress, and the archive is made once per checkpoint.

// packDir packs the regular files and folders under dir, with paths
// relative to it. skip, when set, leaves out the files it returns true for
// (by their slash-separated relative path).
func packDir(dir string, skip func(rel string, info fs.FileInfo) bool) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755, ModTime: info.ModTime()})
		case !info.Mode().IsRegular():
			return nil // links, sockets: not part of a checkpoint
		case skip != nil && skip(rel, info):
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: int64(info.Mode().Perm()), Size: info.Size(), ModTime: info.ModTime()}); err != nil {
			return err
		}
		// A file that grows while being read is cut at its size when
		// the walk saw it, so the archive stays well formed.
		_, err = io.Copy(tw, io.LimitReader(f, info.Size()))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tune: packing %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tune: packing %s: %w", dir, err)
	}
	return buf.Bytes(), nil
}

// unpackDir writes the archive packDir made into dir (created if need be),
// replacing files of the same names. Entries that would land outside dir
// are an error.
func unpackDir(archive []byte, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tune: unpacking into %s: %w", dir, err)
	}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tune: unpacking into %s: the archive is damaged: %w", dir, err)
		}
		name := path.Clean(h.Name)
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("tune: unpacking into %s: entry %q would land outside it", dir, h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("tune: unpacking into %s: %w", dir, err)
			}
		case tar.TypeReg:
			if err := writeEntry(tr, target, fs.FileMode(h.Mode).Perm(), h.ModTime); err != nil {
				return fmt.Errorf("tune: unpacking into %s: %w", dir, err)
			}
		}
	}
}

func writeEntry(r io.Reader, target string, mode fs.FileMode, mtime time.Time) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chtimes(target, mtime, mtime)
}

// dirSync sends the files a trainable writes into its run folder on the
// actor's node to the trial's folder on the driver: each call packs the
// files that are new or changed (size or modification time) since the
// last.
type dirSync struct {
	dir  string
	seen map[string]fileStamp
}

type fileStamp struct {
	size  int64
	mtime time.Time
}

// changes packs what changed under s.dir since the last call; nil when
// nothing did.
func (s *dirSync) changes() ([]byte, error) {
	if s.seen == nil {
		s.seen = map[string]fileStamp{}
	}
	n := 0
	b, err := packDir(s.dir, func(rel string, info fs.FileInfo) bool {
		st := fileStamp{info.Size(), info.ModTime()}
		if s.seen[rel] == st {
			return true
		}
		s.seen[rel] = st
		n++
		return false
	})
	if err != nil || n == 0 {
		return nil, err
	}
	return b, nil
}
