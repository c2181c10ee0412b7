package cputime

import (
	"fmt"
	"os"
)

func of(pid int) (Usage, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, false
	}
	return parseStat(string(data))
}
