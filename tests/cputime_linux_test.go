//go:build linux

package tests

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// processCPU returns the user and system CPU time process pid has used, all its threads
// told, to the kernel's clock tick (10 ms); false if it cannot be read.
func processCPU(pid int) (time.Duration, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name, field 2, may hold spaces: count fields after its closing paren.
	rest := string(data)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest) // f[0] is field 3, the state
	var utime, stime int64
	if len(f) < 13 {
		return 0, false
	}
	if _, err := fmt.Sscan(f[11], &utime); err != nil {
		return 0, false
	}
	if _, err := fmt.Sscan(f[12], &stime); err != nil {
		return 0, false
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on every Linux Go supports
	return time.Duration(utime+stime) * tick, true
}
