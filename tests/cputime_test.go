package tests

import "time"

// usage is what a process has used so far, all its threads told (see processUsage).
type usage struct {
	cpu    time.Duration // user and system time, to the kernel's clock tick (10 ms)
	faults int64         // minor page faults: first touches of memory
}
