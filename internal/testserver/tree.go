package testserver

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// freeze sends SIGSTOP to the process group that leader leads and to every process it forked,
// and theirs, until each is stopped (or gone), and returns them, leader first. A stopped
// process forks nothing, so the list is then complete, where a list taken while the leader
// runs misses the process it forks next. The group alone is not enough: a child may leave it
// (a PostgreSQL backend calls setsid).
func freeze(leader int) []int {
	_ = syscall.Kill(-leader, syscall.SIGSTOP)
	tree := []int{leader}
	in := map[int]bool{leader: true}
	for {
		waitStopped(tree)
		added := false
		for _, pid := range pids() {
			if ppid, _, ok := stat(pid); ok && in[ppid] && !in[pid] {
				_ = syscall.Kill(pid, syscall.SIGSTOP)
				tree, in[pid], added = append(tree, pid), true, true
			}
		}
		if !added {
			return tree
		}
	}
}

// descendants returns the processes that leader forked, and theirs.
func descendants(leader int) []int {
	in := map[int]bool{leader: true}
	var out []int
	for added := true; added; {
		added = false
		for _, pid := range pids() {
			if ppid, _, ok := stat(pid); ok && in[ppid] && !in[pid] {
				in[pid], added = true, true
				out = append(out, pid)
			}
		}
	}
	return out
}

// signalTree sends sig to the process group that leader leads and to each of its
// descendants (a process that left the group included).
func signalTree(leader int, sig syscall.Signal) error {
	err := syscall.Kill(-leader, sig)
	for _, pid := range descendants(leader) {
		_ = syscall.Kill(pid, sig) // it may have just exited
	}
	return err
}

// pids returns the IDs of the processes in /proc.
func pids() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// stat returns the parent and the state of process pid, from /proc/<pid>/stat.
func stat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, so cut at the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}

// alive reports whether pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	_, state, ok := stat(pid)
	return ok && state != 'Z' && state != 'X'
}

// waitStopped waits, ten seconds at most, until each of pids is stopped or has exited.
func waitStopped(pids []int) {
	waitAll(pids, func(pid int) bool {
		_, state, ok := stat(pid)
		return !ok || strings.IndexByte("TtZX", state) >= 0
	})
}

// waitGone waits, ten seconds at most, until none of pids is a live process (gone, or a
// zombie left for its parent to reap), and reports whether none is.
func waitGone(pids []int) bool {
	return waitAll(pids, func(pid int) bool { return !alive(pid) })
}

// waitAll waits, ten seconds at most, until done holds for each of pids, and reports whether
// it does.
func waitAll(pids []int, done func(pid int) bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for !done(pid) {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(time.Millisecond) // a polling pace: these are not our children to wait for
		}
	}
	return true
}
