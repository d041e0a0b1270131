package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/gray-ml/gray/runtime/session"
	"github.com/spf13/cobra"
)

func newStop() *cobra.Command {
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop every node (and the head's Redis) that `gray start` started on this machine",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStop(cmd.OutOrStdout(), grace)
		},
	}
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "how long nodes may take to stop before they are killed")
	return cmd
}

// runStop stops the indexed sessions, nodes before heads: each daemon
// gets SIGTERM, then its process group SIGKILL after the grace period
// (which ends whatever it started that is still there); the head's
// redis-server is stopped likewise. It returns once none of their
// processes is left.
func runStop(out io.Writer, grace time.Duration) error {
	all, err := session.List()
	if err != nil {
		return err
	}
	var errs []error
	stopped, dead := 0, 0
	for _, s := range all {
		ran, err := stopSession(s, grace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ran {
			stopped++
		} else {
			dead++
		}
		if err := s.Unindex(); err != nil {
			errs = append(errs, err)
		}
	}
	// A node killed earlier is cleaned up too, but was not running: the
	// count says how many were ("Stopped 10 nodes" read 6 running).
	fmt.Fprintf(out, "Stopped %s.", plural(stopped, "node"))
	if dead > 0 {
		fmt.Fprintf(out, " %d more had died already.", dead)
	}
	fmt.Fprintln(out)
	return errors.Join(errs...)
}

// stopSession stops a session's node (and a head's Redis); ran says
// whether its node daemon was still running.
func stopSession(s *session.Session, grace time.Duration) (ran bool, err error) {
	pid := s.PID(session.NodePIDFile)
	if session.Alive(pid) && !isNodeDaemon(pid, s) {
		pid = 0 // the pid was reused by another program: not ours to stop
	}
	ran = session.Alive(pid)
	if err := terminate(pid, grace); err != nil {
		return ran, fmt.Errorf("stopping node %s: %w", s.NodeID, err)
	}
	if s.Head {
		rpid := s.PID(session.RedisPIDFile)
		if session.Alive(rpid) && !isRedis(rpid) {
			rpid = 0
		}
		if err := terminate(rpid, grace); err != nil {
			return ran, fmt.Errorf("stopping the Redis of node %s: %w", s.NodeID, err)
		}
	}
	return ran, nil
}

// terminate sends SIGTERM to a process group leader, SIGKILL to its group
// after grace, and waits until the leader is gone. The group is killed
// even when the leader is gone already (kill -9), which ends what it left.
func terminate(pid int, grace time.Duration) error {
	if pid <= 0 {
		return nil
	}
	leader := isGroupLeader(pid)
	if session.Alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		waitGone(pid, grace)
	}
	if leader || !session.Alive(pid) {
		// A pid is never reused while its process group exists, so this
		// reaches only what the node started.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	if session.Alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if !waitGone(pid, 5*time.Second) {
		return fmt.Errorf("process %d does not end", pid)
	}
	if !waitGroupGone(pid, 5*time.Second) {
		return fmt.Errorf("processes of group %d do not end", pid)
	}
	return nil
}

func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for session.Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// waitGroupGone waits until no live process is in the group pgid.
func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for len(groupMembers(pgid)) > 0 {
		if time.Now().After(deadline) {
			return false
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// groupMembers lists the live (not zombie) processes of a process group.
func groupMembers(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		state, pg, ok := procStat(pid)
		if ok && pg == pgid && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// procStat reads a process's state and process group from /proc.
func procStat(pid int) (state byte, pgid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	// After the name: state, ppid, pgrp.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0, 0, false
	}
	if _, err := fmt.Sscan(f[2], &pgid); err != nil {
		return 0, 0, false
	}
	return f[0][0], pgid, true
}

func isGroupLeader(pid int) bool {
	_, pg, ok := procStat(pid)
	return ok && pg == pid
}

// isNodeDaemon checks that pid runs `gray node --session <its dir>`.
func isNodeDaemon(pid int, s *session.Session) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	for i, a := range args {
		if a == "--session" && i+1 < len(args) && args[i+1] == s.TempDir {
			return true
		}
	}
	// `gray start --block` runs the daemon in the start command itself.
	return len(args) > 1 && args[1] == "start"
}

func isRedis(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return err == nil && strings.HasPrefix(string(b), "redis-server")
}
