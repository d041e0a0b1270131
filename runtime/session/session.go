// Package session keeps the files that say what `gray start` started on
// this machine: one session file per node (in the node's temp dir, 0600,
// since it holds the cluster token) and an index of them in a directory
// only its owner can read (/tmp/gray-<uid>/sessions, or $GRAY_SESSION_DIR).
// `gray stop` stops what the index lists; a driver asking for Address
// "auto" finds the head here, and the token with it.
package session

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gray-ml/gray/runtime/task"
)

// EnvIndexDir overrides the index directory (tests give each cluster its
// own, so that `gray stop` in one test never stops another's nodes).
const EnvIndexDir = "GRAY_SESSION_DIR"

// EnvAddress and EnvToken are how a driver is told a cluster's address
// and token without flags.
const (
	EnvAddress = "GRAY_ADDRESS"
	EnvToken   = "GRAY_TOKEN"
)

// File names inside a node's temp dir.
const (
	FileName     = "session.json" // the Session
	NodePIDFile  = "node.pid"     // the node daemon
	RedisPIDFile = "redis.pid"    // the head's redis-server
)

// Session is what `gray start` records about one node it started.
type Session struct {
	Version int
	Head    bool
	Address string // the cluster's Redis, IP:PORT
	Token   string // the cluster token, 64 hex digits
	NodeID  string
	NodeIP  string
	// NodePort is the port of the node's own server (0: any free one).
	NodePort          int
	TempDir           string // absolute
	Resources         task.Resources
	ObjectStoreMemory int64 // bytes; 0: the runtime's default
	// MaxCache bounds the node's cache of executables, in bytes (0:
	// cluster.DefaultMaxCache).
	MaxCache int64
	// HeartbeatInterval and NodeTimeout tune failure detection (0:
	// monitor's defaults); NodeTimeout matters on the head only.
	HeartbeatInterval, NodeTimeout time.Duration
	// KeepEnded is how long the cluster lists dead nodes, ended jobs,
	// ended tasks and dead actors (0: control.DefaultKeepEnded);
	// MaxTaskRecords how many tasks each job keeps listed (0:
	// control.DefaultMaxTaskRecords). They matter on the head only.
	KeepEnded      time.Duration
	MaxTaskRecords int `json:",omitempty"`
	Started        time.Time
	// ExternalRedis marks a head that uses a Redis it did not start (a
	// standby head: gray start --head --redis-address): it runs the
	// monitor but no redis-server, and `gray stop` leaves that Redis be.
	ExternalRedis bool `json:",omitempty"`
}

// Base returns the per-user directory under which sessions live by
// default: /tmp/gray-<uid>.
func Base() string {
	return filepath.Join(os.TempDir(), "gray-"+strconv.Itoa(os.Getuid()))
}

// IndexDir returns the index directory: $GRAY_SESSION_DIR, or
// /tmp/gray-<uid>/sessions.
func IndexDir() string {
	if d := os.Getenv(EnvIndexDir); d != "" {
		return d
	}
	return filepath.Join(Base(), "sessions")
}

// NewToken returns a fresh cluster token: 32 random bytes, hex.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("session: making a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// NewNodeID returns a fresh random node ID.
func NewNodeID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("session: making a node ID: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// CheckToken reports whether t looks like a cluster token.
func CheckToken(t string) error {
	if b, err := hex.DecodeString(t); err != nil || len(b) != 32 {
		return errors.New("the token must be the 64 hex digits `gray start --head` printed")
	}
	return nil
}

// MkdirPrivate creates dir (and parents) readable by its owner only, and
// tightens it if it existed. It refuses a dir that is a symbolic link or
// belongs to another user (someone else's /tmp/gray-<uid> must not
// receive the token).
func MkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("session: creating %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("session: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || (ok && int(st.Uid) != os.Getuid()) {
		return fmt.Errorf("session: %s is not a directory of this user (uid %d): remove it, or choose another directory", dir, os.Getuid())
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	return nil
}

// writePrivate writes a file 0600 atomically (a temp file renamed).
func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("session: writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("session: writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("session: writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("session: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("session: writing %s: %w", path, err)
	}
	return nil
}

// Path returns the session file's path.
func (s *Session) Path() string { return filepath.Join(s.TempDir, FileName) }

// indexEntry is the index file that points at a session.
func (s *Session) indexEntry() string {
	return filepath.Join(IndexDir(), "node-"+s.NodeID+".json")
}

// Write writes the session file into its temp dir (created 0700) and
// adds it to the index.
func (s *Session) Write() error {
	if s.NodeID == "" || s.TempDir == "" {
		return errors.New("session: a session needs a node ID and a temp dir")
	}
	if !filepath.IsAbs(s.TempDir) {
		return fmt.Errorf("session: temp dir %q is not absolute", s.TempDir)
	}
	if s.Version == 0 {
		s.Version = 1
	}
	if err := MkdirPrivate(s.TempDir); err != nil {
		return err
	}
	if err := MkdirPrivate(IndexDir()); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("session: encoding: %w", err)
	}
	if err := writePrivate(s.Path(), b); err != nil {
		return err
	}
	if s.Head && s.Token != "" {
		if err := writePrivate(s.TokenPath(), []byte(s.Token+"\n")); err != nil {
			return err
		}
	}
	ptr, _ := json.Marshal(indexRecord{TempDir: s.TempDir})
	return writePrivate(s.indexEntry(), ptr)
}

type indexRecord struct{ TempDir string }

// Read reads the session file of a node's temp dir.
func Read(tempDir string) (*Session, error) {
	b, err := os.ReadFile(filepath.Join(tempDir, FileName))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	var s Session
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("session: %s is corrupt: %w", filepath.Join(tempDir, FileName), err)
	}
	return &s, nil
}

// Unindex removes the session from the index (its files stay, for the
// logs).
func (s *Session) Unindex() error {
	if err := os.Remove(s.indexEntry()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("session: %w", err)
	}
	return nil
}

// List returns the indexed sessions, heads last (the order to stop them
// in). Stale entries are removed from the index: those whose session file
// is gone, and those of an earlier node of a temp dir that a later `gray
// start` reused (its session file names another node now), so that a
// temp dir counts once.
func List() ([]*Session, error) {
	dir := IndexDir()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session: reading the index: %w", err)
	}
	var out []*Session
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "node-") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var rec indexRecord
		if json.Unmarshal(b, &rec) != nil {
			os.Remove(path)
			continue
		}
		s, err := Read(rec.TempDir)
		if err != nil {
			os.Remove(path) // its temp dir was removed
			continue
		}
		if s.indexEntry() != path {
			os.Remove(path) // the temp dir was reused by a later node
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Head != out[j].Head {
			return !out[i].Head
		}
		return out[i].Started.Before(out[j].Started)
	})
	return out, nil
}

// WritePID records a process of the session (NodePIDFile, RedisPIDFile).
func (s *Session) WritePID(file string, pid int) error {
	return writePrivate(filepath.Join(s.TempDir, file), []byte(strconv.Itoa(pid)+"\n"))
}

// PID reads a recorded process ID; 0 when none is recorded.
func (s *Session) PID(file string) int {
	b, err := os.ReadFile(filepath.Join(s.TempDir, file))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// Running reports whether the session's node daemon runs.
func (s *Session) Running() bool { return Alive(s.PID(NodePIDFile)) }

// Alive reports whether a process exists and is not a zombie.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses.
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

// FindHead returns the session of the head running on this machine, for
// Address "auto". It is an error when none runs, or several do.
func FindHead() (*Session, error) {
	all, err := List()
	if err != nil {
		return nil, err
	}
	var heads []*Session
	for _, s := range all {
		if s.Head && s.Running() {
			heads = append(heads, s)
		}
	}
	switch len(heads) {
	case 0:
		return nil, errors.New("no Gray cluster runs on this machine (start one with `gray start --head`, or give its address)")
	case 1:
		return heads[0], nil
	}
	addrs := make([]string, len(heads))
	for i, h := range heads {
		addrs[i] = h.Address
	}
	return nil, fmt.Errorf("several Gray clusters run on this machine (%s): give the address of one", strings.Join(addrs, ", "))
}

// Resolve turns what a user gave into a cluster's address and token:
// address "" means $GRAY_ADDRESS ("" when that is unset too: no cluster),
// "auto" means the head running on this machine; token "" means
// $GRAY_TOKEN, or else the token of a session on this machine with that
// address.
func Resolve(address, token string) (addr, tok string, err error) {
	if address == "" {
		address = os.Getenv(EnvAddress)
	}
	if token == "" {
		token = os.Getenv(EnvToken)
	}
	switch address {
	case "":
		return "", "", nil
	case "auto":
		h, err := FindHead()
		if err != nil {
			return "", "", err
		}
		if token == "" {
			token = h.Token
		}
		return h.Address, token, nil
	}
	if token == "" {
		all, _ := List()
		for _, s := range all {
			if s.Address == address {
				token = s.Token
				break
			}
		}
	}
	if token == "" {
		return "", "", fmt.Errorf("no token for the cluster at %s: give the one `gray start --head` printed (--token or %s)", address, EnvToken)
	}
	if err := CheckToken(token); err != nil {
		return "", "", err
	}
	return address, token, nil
}
