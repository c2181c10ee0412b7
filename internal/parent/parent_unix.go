//go:build unix

package parent

import (
	"context"
	"os"
	"time"
)

// pollEvery is how often the parent is looked at where nothing tells of its end.
const pollEvery = 500 * time.Millisecond

// waitGone returns true once the parent is no longer ppid (a dead parent's children are
// handed to init or a subreaper), false once ctx ends.
func waitGone(ctx context.Context, ppid int) bool {
	// wake fires at the parent's end where the system can say so (Linux); poll is then
	// only a check for a missed or refused notice.
	wake, poll, stop := notifyDeath()
	defer stop()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		// Also checked first: the parent may have died before the notice was asked for.
		if os.Getppid() != ppid {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-wake:
		case <-t.C:
		}
	}
}
