//go:build !linux

package tests

import "time"

// processCPU reports false: only Linux is read.
func processCPU(pid int) (time.Duration, bool) { return 0, false }
