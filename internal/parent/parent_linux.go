package parent

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// deathSignal is what Linux sends at the parent's end (PR_SET_PDEATHSIG). Not SIGTERM: the
// notice comes when the parent THREAD that started toolsift ends, which a client that
// starts servers from a worker thread (a Java or Python thread pool, a Node worker) does
// while it lives on. So the signal only wakes the watch, which then asks getppid, which
// names the parent process and changes only when all of it is gone.
const deathSignal = syscall.SIGUSR1

// notifyDeath asks Linux for deathSignal at the parent's end.
func notifyDeath() (wake <-chan os.Signal, poll time.Duration, stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, deathSignal)
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(deathSignal), 0, 0, 0); err != nil {
		signal.Stop(ch)
		return nil, pollEvery, func() {}
	}
	// The notice is only a wake-up; a slow poll stays as a check.
	return ch, 10 * pollEvery, func() {
		// Cleared before the handler goes: unhandled, SIGUSR1 would end the process.
		_ = unix.Prctl(unix.PR_SET_PDEATHSIG, 0, 0, 0, 0)
		signal.Stop(ch)
	}
}
