//go:build unix

package tune

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockJournal takes an exclusive advisory lock on the journal so that two
// processes never run (or resume) the same experiment at once. The kernel
// drops the lock when the process dies, SIGKILL included.
func lockJournal(f *os.File, dir string) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("tune: experiment %s is being run by another process; wait for it to end (or stop it) before resuming", dir)
	}
	if err != nil {
		return fmt.Errorf("tune: locking the experiment journal: %w", err)
	}
	return nil
}
