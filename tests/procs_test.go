package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Processes as /proc shows them, for tests that count what toolsift started and left.

// starts returns the PIDs the fixture recorded in a --pid-dir, one per start.
func starts(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat returns a process's parent PID and state letter; zero and "" if it is gone.
func procStat(pid int) (ppid int, state string) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, ""
	}
	rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
	fields := strings.Fields(rest)
	ppid, _ = strconv.Atoi(fields[1])
	return ppid, fields[0]
}

// running reports whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	_, state := procStat(pid)
	return state != "" && state != "Z"
}

// childrenOf returns the PIDs of the processes whose parent is pid, zombies included.
func childrenOf(t testing.TB, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc on this system")
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procStat(p); ppid == pid {
			out = append(out, p)
		}
	}
	return out
}
