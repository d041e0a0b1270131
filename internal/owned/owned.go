// Package owned makes temporary directories that name the process owning
// them, so that the next Gray process on the machine can sweep those
// whose owner died (SIGKILL leaves them behind: a driver's node.sock
// folder, a sweep's trial folder) without touching a live one.
package owned

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The prefixes of the folders Gray makes with MkdirTemp in the system's
// temporary directory.
const (
	// SocketDirPrefix: a node's folder, holding its node.sock.
	SocketDirPrefix = "gray-"
	// TrialDirPrefix: a sweep trial's run folder on its node.
	TrialDirPrefix = "gray-trial-"
)

// SweepTemp sweeps the system's temporary directory of every kind of
// folder Gray makes there whose owner died (see Sweep).
func SweepTemp() ([]string, error) {
	var all []string
	var errs []error
	for _, p := range []string{SocketDirPrefix, TrialDirPrefix} {
		r, err := Sweep(os.TempDir(), p)
		all = append(all, r...)
		errs = append(errs, err)
	}
	return all, errors.Join(errs...)
}

// StartTime returns a process's start time (field 22 of /proc/pid/stat,
// in clock ticks): with the pid it names one process, since a pid may be
// reused but not with the same start time.
func StartTime(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return "", errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", errors.New("malformed stat")
	}
	return f[19], nil
}

// MkdirTemp creates a directory in dir ("" for the system's temporary
// directory) named prefix + "<pid>.<start>-" + random, naming this
// process as its owner.
func MkdirTemp(dir, prefix string) (string, error) {
	st, err := StartTime(os.Getpid())
	if err != nil {
		st = "0"
	}
	return os.MkdirTemp(dir, prefix+strconv.Itoa(os.Getpid())+"."+st+"-")
}

// Sweep removes the directories under root that MkdirTemp made with
// prefix and whose owner process is gone, and returns them. Directories
// named otherwise are left alone.
func Sweep(root, prefix string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(root, prefix+"*"))
	if err != nil {
		return nil, fmt.Errorf("owned: %w", err)
	}
	var removed []string
	var errs []error
	for _, d := range dirs {
		pid, start, ok := parse(strings.TrimPrefix(filepath.Base(d), prefix))
		if !ok {
			continue
		}
		if st, err := StartTime(pid); err == nil && st == start {
			continue // its owner lives
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, d)
	}
	return removed, errors.Join(errs...)
}

// parse reads "<pid>.<start>-<random>".
func parse(name string) (pid int, start string, ok bool) {
	owner, _, found := strings.Cut(name, "-")
	p, s, dot := strings.Cut(owner, ".")
	if !found || !dot || s == "" {
		return 0, "", false
	}
	if _, err := strconv.ParseUint(s, 10, 64); err != nil {
		return 0, "", false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	return pid, s, true
}
