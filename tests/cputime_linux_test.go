//go:build linux

package tests

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// processUsage returns what process pid has used; false if it cannot be read.
func processUsage(pid int) (usage, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return usage{}, false
	}
	// The command name, field 2, may hold spaces: count fields after its closing paren.
	rest := string(data)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest) // f[0] is field 3, the state
	var minflt, utime, stime int64
	if len(f) < 13 {
		return usage{}, false
	}
	for _, v := range []struct {
		field int
		to    *int64
	}{{7, &minflt}, {11, &utime}, {12, &stime}} {
		if _, err := fmt.Sscan(f[v.field], v.to); err != nil {
			return usage{}, false
		}
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on every Linux Go supports
	return usage{cpu: time.Duration(utime+stime) * tick, faults: minflt}, true
}
