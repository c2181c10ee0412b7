//go:build !linux

package search

import "time"

// threadCPU is 0 where the thread's CPU time is not read: benchmarks report the wall clock.
func threadCPU() time.Duration { return 0 }
