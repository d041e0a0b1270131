package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// TokenFile is the name of the head's token file in its temp dir: the
// cluster token alone, 0600, for --token-file.
const TokenFile = "token"

// TokenPath returns the path of a head's token file.
func (s *Session) TokenPath() string { return filepath.Join(s.TempDir, TokenFile) }

// ReadTokenFile reads a cluster token from a file holding it (the head's
// token file, or a copy). It refuses a file that other users may read,
// since the token lets its holder run code on every node.
func ReadTokenFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("--token-file %s may be read by other users (mode %v): `chmod 600 %s` first", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if err := CheckToken(tok); err != nil {
		return "", fmt.Errorf("--token-file %s: %w", path, err)
	}
	return tok, nil
}

// TokenFromFlags turns the --token and --token-file flags of a command
// into a token ("" when neither was given: Resolve then looks at
// $GRAY_TOKEN and this machine's sessions). A token given on the command
// line still works, but every local user can read it there (`ps`), so
// warn gets a line saying what to use instead.
func TokenFromFlags(token, file string, warn io.Writer) (string, error) {
	switch {
	case token != "" && file != "":
		return "", errors.New("give --token-file or --token, not both")
	case file != "":
		return ReadTokenFile(file)
	case token != "":
		fmt.Fprintf(warn, "warning: --token on the command line can be read by every user of this machine (ps); use --token-file FILE or %s instead\n", EnvToken)
	}
	return token, nil
}
