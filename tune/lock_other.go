//go:build !unix

package tune

import "os"

// lockJournal is a no-op where flock is not available.
func lockJournal(*os.File, string) error { return nil }
