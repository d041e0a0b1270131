package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newSession(t *testing.T, head bool, addr string) *Session {
	t.Helper()
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	id, err := NewNodeID()
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{Head: head, Address: addr, Token: tok, NodeID: id, NodeIP: "127.0.0.1",
		TempDir: filepath.Join(t.TempDir(), "node"), Started: time.Now()}
	if err := s.Write(); err != nil {
		t.Fatal(err)
	}
	return s
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestFilesAreOwnerOnly(t *testing.T) {
	t.Setenv(EnvIndexDir, filepath.Join(t.TempDir(), "index"))
	s := newSession(t, true, "127.0.0.1:1")
	if err := s.WritePID(NodePIDFile, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s.Path(), s.indexEntry(), filepath.Join(s.TempDir, NodePIDFile)} {
		if m := mode(t, p); m != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, m)
		}
	}
	for _, d := range []string{s.TempDir, IndexDir()} {
		if m := mode(t, d); m != 0o700 {
			t.Errorf("%s has mode %v, want 0700", d, m)
		}
	}
}

func TestListFindAndResolve(t *testing.T) {
	t.Setenv(EnvIndexDir, filepath.Join(t.TempDir(), "index"))
	t.Setenv(EnvAddress, "")
	t.Setenv(EnvToken, "")
	if _, err := FindHead(); err == nil || !strings.Contains(err.Error(), "gray start --head") {
		t.Fatalf("FindHead with nothing running: %v", err)
	}
	head := newSession(t, true, "127.0.0.1:7000")
	node := newSession(t, false, "127.0.0.1:7000")
	node.Token = head.Token
	if err := node.Write(); err != nil {
		t.Fatal(err)
	}
	all, err := List()
	if err != nil || len(all) != 2 || all[0].Head || !all[1].Head {
		t.Fatalf("List = %v, %v; want the node, then the head", all, err)
	}
	if _, err := FindHead(); err == nil {
		t.Fatal("FindHead found a head whose daemon does not run")
	}
	if err := head.WritePID(NodePIDFile, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr, tok, wantAddr, wantTok, wantErr string
	}{
		{"", "", "", "", ""},
		{"auto", "", head.Address, head.Token, ""},
		{"127.0.0.1:7000", "", head.Address, head.Token, ""},
		{"10.0.0.1:6379", "", "", "", "no token"},
		{"10.0.0.1:6379", "abc", "", "", "64 hex digits"},
	} {
		addr, tok, err := Resolve(tc.addr, tc.tok)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Resolve(%q, %q) err = %v, want %q", tc.addr, tc.tok, err, tc.wantErr)
			}
			continue
		}
		if err != nil || addr != tc.wantAddr || tok != tc.wantTok {
			t.Errorf("Resolve(%q, %q) = %q, %q, %v", tc.addr, tc.tok, addr, tok, err)
		}
	}
	t.Setenv(EnvAddress, "auto")
	if addr, _, err := Resolve("", ""); err != nil || addr != head.Address {
		t.Errorf("Resolve with GRAY_ADDRESS=auto = %q, %v", addr, err)
	}
	if err := node.Unindex(); err != nil {
		t.Fatal(err)
	}
	if all, _ := List(); len(all) != 1 {
		t.Fatalf("after Unindex List has %d sessions", len(all))
	}
	os.RemoveAll(head.TempDir)
	if all, _ := List(); len(all) != 0 {
		t.Fatalf("a session whose temp dir is gone is still listed")
	}
}

func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	if Alive(0) || Alive(-1) || Alive(1<<30) {
		t.Error("a process that cannot exist is alive")
	}
}

func TestMkdirPrivateRefusesALink(t *testing.T) {
	target := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := MkdirPrivate(link); err == nil || !strings.Contains(err.Error(), "not a directory of this user") {
		t.Fatalf("MkdirPrivate of a symbolic link: %v", err)
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MkdirPrivate(open); err != nil || mode(t, open) != 0o700 {
		t.Fatalf("MkdirPrivate of an open dir: %v, mode %v", err, mode(t, open))
	}
}

// A temp dir reused by a later `gray start` (a new node ID) is listed
// once, and the earlier node's index entry is removed: `gray stop` counts
// the nodes that ran, not every start there ever was.
func TestReusedTempDirIsListedOnce(t *testing.T) {
	t.Setenv(EnvIndexDir, filepath.Join(t.TempDir(), "index"))
	first := newSession(t, false, "127.0.0.1:1")
	for range 2 {
		id, err := NewNodeID()
		if err != nil {
			t.Fatal(err)
		}
		again := *first
		again.NodeID = id
		if err := again.Write(); err != nil {
			t.Fatal(err)
		}
		all, err := List()
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 1 || all[0].NodeID != id {
			t.Fatalf("List after reusing the temp dir: %d sessions, want only node %s", len(all), id)
		}
		ents, _ := os.ReadDir(IndexDir())
		if len(ents) != 1 {
			t.Fatalf("index holds %d entries, want 1", len(ents))
		}
	}
}
