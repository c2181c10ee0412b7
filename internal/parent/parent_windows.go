package parent

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/windows"
)

// waitGone returns true once the parent process has ended, false once ctx ends. Windows
// hands no orphan to anyone, so the parent's end is waited on through a handle to it.
func waitGone(ctx context.Context, ppid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(ppid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return true // no such process: the parent is gone already
	}
	if err != nil {
		// Not ours to watch (access denied): toolsift ends with its stdin, as before.
		<-ctx.Done()
		return false
	}
	defer windows.CloseHandle(h)
	// A process ID is reused: one that started after toolsift is not its parent.
	if started(h) > started(windows.CurrentProcess()) {
		return true
	}
	for {
		ev, err := windows.WaitForSingleObject(h, uint32(pollEvery/time.Millisecond))
		if err != nil {
			// A wait that fails would fail again at once: end with stdin, as before.
			<-ctx.Done()
			return false
		}
		if ev == windows.WAIT_OBJECT_0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		default:
		}
	}
}

// pollEvery is how often the watch looks at ctx between waits on the parent.
const pollEvery = 500 * time.Millisecond

// started returns when process h was created; zero if that is unknown.
func started(h windows.Handle) int64 {
	var created, exited, kernel, user windows.Filetime
	if windows.GetProcessTimes(h, &created, &exited, &kernel, &user) != nil {
		return 0
	}
	return created.Nanoseconds()
}
