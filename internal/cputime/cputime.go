// Package cputime reads the CPU time processes have used, for benchmarks that report it
// beside the wall clock: CPU time does not count what other processes on a shared machine
// take from the core.
package cputime

import "time"

// Usage is what a process has used so far, all its threads told.
type Usage struct {
	CPU    time.Duration // user and system time
	Faults int64         // minor page faults: first touches of memory
}

// Self returns the CPU time this process has used, user and system, on every core; 0 where
// the system does not say.
func Self() time.Duration { return self() }

// Of returns what process pid has used, its CPU time to the kernel's clock tick; false where
// it cannot be read (only Linux's /proc is).
func Of(pid int) (Usage, bool) { return of(pid) }
