package cputime

import (
	"fmt"
	"strings"
	"time"
)

// parseStat reads minflt, utime and stime from a /proc/PID/stat line.
func parseStat(stat string) (Usage, bool) {
	// The command name, field 2, may hold spaces and parens: count fields after its last
	// closing paren.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return Usage{}, false
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3, the state
	if len(f) < 13 {
		return Usage{}, false
	}
	var minflt, utime, stime int64
	for _, v := range []struct {
		field int
		to    *int64
	}{{7, &minflt}, {11, &utime}, {12, &stime}} {
		if _, err := fmt.Sscan(f[v.field], v.to); err != nil {
			return Usage{}, false
		}
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on every Linux Go supports
	return Usage{CPU: time.Duration(utime+stime) * tick, Faults: minflt}, true
}
