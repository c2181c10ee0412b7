//go:build !unix

package upstream

import "time"

// cpuTime returns 0: benchmarks report no CPU time where getrusage is missing.
func cpuTime() time.Duration { return 0 }
