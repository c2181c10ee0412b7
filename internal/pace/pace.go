// Package pace lets a long computation on a goroutine of its own give way to requests.
//
// Go preempts a running goroutine only after 10 ms. On two cores, a request readied behind
// a computation such as building the search index of 50,000 tools (over half a second)
// may wait that long: the other core may be running the garbage collector, or its sweeper,
// which yields to the global queue and so never takes work from this core's. A computation
// that yields every quarter millisecond, and sleeps every eighth time (see Step), keeps that
// wait to a few milliseconds.
package pace

import (
	"runtime"
	"time"
)

// Every is how much a computation runs between yields.
const Every = 250 * time.Microsecond

// Pacer yields the processor each time a computation has run for Every. Its zero value is
// ready; it is not safe for concurrent use.
type Pacer struct {
	n, yields int
	last      time.Time
}

// Step counts one step of the computation, and yields if Every has passed since the last
// yield. The clock is read every 32 steps, so a step may be as short as a few nanoseconds.
func (p *Pacer) Step() {
	if p.n++; p.n%32 != 0 {
		return
	}
	if now := time.Now(); now.Sub(p.last) >= Every {
		if p.yields++; p.yields%8 == 0 {
			// A goroutine that yields goes to the global queue, which an idle processor
			// looks at before it takes work from another's: now and then, sleep instead,
			// so that a request queued on the other core's processor is taken here. The
			// sleep is as short as the timers allow, which on Linux may be a millisecond
			// when nothing else wakes the process: the computation takes longer, up to a
			// fifth at 50,000 tools.
			time.Sleep(time.Microsecond)
		} else {
			runtime.Gosched()
		}
		p.last = time.Now()
	}
}
