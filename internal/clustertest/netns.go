package clustertest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Machines that share nothing: each Machine is a network namespace with
// its own address on a private bridge (a veth pair per machine) and a
// mount namespace of its own with private tmpfs on /tmp and /dev/shm, so
// what one machine writes there no other sees, and no traffic between
// them goes over loopback. A holder process (sh, then cat) keeps both
// namespaces alive; commands enter them with nsenter. Everything is
// removed when the test ends, failed or not: every process left in a
// machine's namespaces is killed, then the namespaces and links are
// deleted. Names carry this test binary's pid and a random tag, so runs
// side by side do not collide.

// Machine is one machine of a Lab.
type Machine struct {
	// Index is the machine's number in its Lab, from 0.
	Index int
	// IP is its address on the lab's bridge.
	IP     string
	netns  string
	made   bool // its network namespace exists
	holder *exec.Cmd
	stdin  io.WriteCloser // closing it ends the holder
	mntNS  string         // readlink of /proc/<holder>/ns/mnt
}

// Lab is a set of Machines on one bridge.
type Lab struct {
	t        testing.TB
	bridge   string
	hostEnds []string
	machines []*Machine
}

// StartLab makes n machines. It skips the test, saying why, when the
// process is not root or the kernel or tools refuse namespaces.
func StartLab(t testing.TB, n int) *Lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("machines in their own namespaces need root (ip netns, mount)")
	}
	for _, tool := range []string{"ip", "unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("machines in their own namespaces need %s (Debian packages iproute2, util-linux)", tool)
		}
	}
	tag := make([]byte, 2)
	if _, err := rand.Read(tag); err != nil {
		t.Fatal(err)
	}
	id := strconv.Itoa(os.Getpid()%100000) + hex.EncodeToString(tag) // ≤ 9 characters: link names hold 15
	l := &Lab{t: t, bridge: "gbr" + id}
	t.Cleanup(l.remove)
	if err := l.ip("link", "add", l.bridge, "type", "bridge"); err != nil {
		t.Skipf("namespaces are not allowed here: %v", err)
	}
	if err := l.ip("link", "set", l.bridge, "up"); err != nil {
		t.Fatal(err)
	}
	// A private /24 in 10.0.0.0/8, drawn so that labs side by side differ.
	subnet := fmt.Sprintf("10.%d.%d.", 200+int(tag[0])%50, tag[1])
	for i := range n {
		m := &Machine{Index: i, IP: subnet + strconv.Itoa(i+2), netns: fmt.Sprintf("gns%s-%d", id, i)}
		host, peer := fmt.Sprintf("gh%s%d", id, i), fmt.Sprintf("gp%s%d", id, i)
		l.machines = append(l.machines, m)
		steps := [][]string{
			{"netns", "add", m.netns},
			{"link", "add", host, "type", "veth", "peer", "name", peer},
			{"link", "set", peer, "netns", m.netns},
			{"link", "set", host, "master", l.bridge},
			{"link", "set", host, "up"},
			{"-n", m.netns, "link", "set", peer, "name", "eth0"},
			{"-n", m.netns, "addr", "add", m.IP + "/24", "dev", "eth0"},
			{"-n", m.netns, "link", "set", "eth0", "up"},
			{"-n", m.netns, "link", "set", "lo", "up"},
		}
		for j, s := range steps {
			if s[0] == "link" && s[1] == "add" {
				l.hostEnds = append(l.hostEnds, host)
			}
			if err := l.ip(s...); err != nil {
				if j == 0 {
					t.Skipf("network namespaces are not allowed here: %v", err)
				}
				t.Fatal(err)
			}
			m.made = true
		}
		if err := l.hold(m); err != nil {
			t.Skipf("mount namespaces with a private /tmp are not allowed here: %v", err)
		}
	}
	return l
}

// hold starts m's holder: in m's network namespace, a new mount namespace
// (private propagation, so nothing leaks back to the host) with fresh tmpfs
// on /tmp and /dev/shm.
func (l *Lab) hold(m *Machine) error {
	script := "mount -t tmpfs -o mode=1777 gray-tmp /tmp && mount -t tmpfs -o mode=1777 gray-shm /dev/shm && echo ready && exec cat >/dev/null"
	cmd := exec.Command("ip", "netns", "exec", m.netns, "unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	m.holder, m.stdin = cmd, stdin
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		_ = cmd.Wait()
		return fmt.Errorf("%s", strings.TrimSpace(stderr.String()))
	}
	m.mntNS, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", cmd.Process.Pid))
	return err
}

func (l *Lab) ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Machine returns machine i.
func (l *Lab) Machine(i int) *Machine { return l.machines[i] }

// Command returns a command that runs name with args on m: in its network
// and mount namespaces.
func (m *Machine) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(m.holder.Process.Pid), "-m", "-n", "--", name}, args...)...)
}

// Path returns where path, as m sees it, is seen from the host (through
// the holder's root: m's /tmp is not the host's).
func (m *Machine) Path(path string) string {
	return filepath.Join(fmt.Sprintf("/proc/%d/root", m.holder.Process.Pid), path)
}

// Install copies the host's file src into m at dst (mode 0755), as an
// operator installs a program on each machine.
func (m *Machine) Install(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	p := m.Path(dst)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o755)
}

// Processes lists the live processes in m's mount namespace, the holder
// included.
func (m *Machine) Processes() []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && ns == m.mntNS {
			pids = append(pids, pid)
		}
	}
	return pids
}

// remove kills every process on the lab's machines and deletes their
// namespaces, the veth pairs and the bridge; it reports what it could
// not remove.
func (l *Lab) remove() {
	var errs []error
	for _, m := range l.machines {
		if m.holder == nil {
			continue
		}
		// Twice: a process may fork while the first round kills.
		for range 2 {
			for _, pid := range m.Processes() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = m.stdin.Close()
		_ = m.holder.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for len(m.Processes()) > 0 && time.Now().Before(deadline) {
			for _, pid := range m.Processes() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if left := m.Processes(); len(left) > 0 {
			errs = append(errs, fmt.Errorf("machine %d: processes %v survive SIGKILL", m.Index, left))
		}
	}
	for _, m := range l.machines {
		if !m.made {
			continue
		}
		if err := l.ip("netns", "del", m.netns); err != nil {
			errs = append(errs, err)
		}
	}
	for _, h := range l.hostEnds {
		_ = l.ip("link", "del", h) // gone with its peer's namespace, usually
	}
	if err := l.ip("link", "del", l.bridge); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		l.t.Error(err)
	}
}
