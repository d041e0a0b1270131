package owned

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A directory whose owner process died is swept; one whose owner lives,
// and one named otherwise, stay.
func TestSweepRemovesOnlyDeadOwners(t *testing.T) {
	root := t.TempDir()
	mine, err := MkdirTemp(root, "gray-")
	if err != nil {
		t.Fatal(err)
	}
	// A real process that has exited owns the other one.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	st, err := StartTime(pid)
	if err != nil {
		t.Skipf("the child ended before its start time was read: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(root, "gray-"+strconv.Itoa(pid)+"."+st+"-x1")
	other := filepath.Join(root, "gray-1000")
	for _, d := range []string{dead, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := Sweep(root, "gray-")
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != dead {
		t.Errorf("removed %v, want only %s", removed, dead)
	}
	for _, d := range []string{mine, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
