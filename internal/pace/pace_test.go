package pace

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestStepYields runs, on one processor, a computation that does nothing but call Step,
// and sleeps 1 ms beside it 20 times: each sleep must end within a few of Every of its
// time, where without the yields it waits for Go's 10 ms preemption.
func TestStepYields(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var p Pacer
		for {
			select {
			case <-stop:
				return
			default:
			}
			for range 1000 {
				p.Step()
			}
		}
	}()
	var late []time.Duration
	for range 20 {
		start := time.Now()
		time.Sleep(time.Millisecond)
		late = append(late, time.Since(start)-time.Millisecond)
	}
	close(stop)
	<-done
	// The median: a shared machine may delay any one of them.
	slices.Sort(late)
	if m := late[len(late)/2]; m > 4*Every {
		t.Errorf("a 1 ms sleep beside the computation ended %v late (median of %d); want at most %v", m, len(late), 4*Every)
	}
}
