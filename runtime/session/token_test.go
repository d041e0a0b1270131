package session

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokenFromFlags(t *testing.T) {
	tok := strings.Repeat("ab", 32)
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	private := write("private", tok+"\n", 0o600)
	loose := write("loose", tok+"\n", 0o644)
	junk := write("junk", "hello\n", 0o600)
	for _, tc := range []struct {
		name, token, file string
		want, err         string
		warns             bool
	}{
		{name: "neither"},
		{name: "file", file: private, want: tok},
		{name: "flag warns", token: tok, want: tok, warns: true},
		{name: "both", token: tok, file: private, err: "not both"},
		{name: "readable by others", file: loose, err: "chmod 600"},
		{name: "not a token", file: junk, err: "64 hex digits"},
		{name: "missing", file: filepath.Join(dir, "none"), err: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warn bytes.Buffer
			got, err := TokenFromFlags(tc.token, tc.file, &warn)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			if w := warn.String(); (w != "") != tc.warns || (tc.warns && !strings.Contains(w, "--token-file")) {
				t.Errorf("warning %q (want one: %v)", w, tc.warns)
			}
		})
	}
}

// A head's session writes the token alone into a 0600 token file.
func TestHeadWritesTokenFile(t *testing.T) {
	t.Setenv(EnvIndexDir, filepath.Join(t.TempDir(), "index"))
	s := newSession(t, true, "127.0.0.1:1")
	got, err := ReadTokenFile(s.TokenPath())
	if err != nil || got != s.Token {
		t.Fatalf("ReadTokenFile = %q, %v; want the session's token", got, err)
	}
	if m := mode(t, s.TokenPath()); m != 0o600 {
		t.Errorf("token file mode %v, want 0600", m)
	}
}
