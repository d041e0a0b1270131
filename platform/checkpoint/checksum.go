package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// checksums hashes every regular file of the checkpoint at agentPath: the
// file itself (as "."), or each file under the folder but the platform's
// own metadata and temporary files.
func checksums(agentPath string) (map[string]string, error) {
	st, err := os.Stat(agentPath)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		sum, err := fileSum(agentPath)
		if err != nil {
			return nil, err
		}
		return map[string]string{".": sum}, nil
	}
	sums := map[string]string{}
	err = filepath.WalkDir(agentPath, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if !d.Type().IsRegular() || name == MetaFile || strings.HasSuffix(name, ".tmp") {
			return nil
		}
		rel, err := filepath.Rel(agentPath, p)
		if err != nil {
			return err
		}
		sum, err := fileSum(p)
		if err != nil {
			return err
		}
		sums[filepath.ToSlash(rel)] = sum
		return nil
	})
	return sums, err
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// verify checks the files of the checkpoint at agentPath against sums (no
// sums: nothing to check). It names the first file missing or changed.
func verify(agentPath string, sums map[string]string) error {
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := agentPath
		if n != "." {
			p = filepath.Join(agentPath, filepath.FromSlash(n))
		}
		got, err := fileSum(p)
		if err != nil {
			return fmt.Errorf("file %s of the checkpoint cannot be read: %w", n, err)
		}
		if got != sums[n] {
			return fmt.Errorf("file %s does not match the checksum recorded when it was saved (it changed on disk since)", p)
		}
	}
	return nil
}
