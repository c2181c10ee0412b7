// Package parent notices the end of the process that started toolsift. A stdio MCP server
// lives for its client; when the client (or the launcher between them) dies without closing
// toolsift's stdin, because something else still holds the other end of the pipe, nothing
// else would ever stop toolsift or the servers it started.
package parent

import (
	"context"
	"log/slog"
	"os"
	"sync"
)

// startPPID is the parent as the process started with it, read as early as Go allows: a
// later change of os.Getppid means the parent died and the process was handed to another.
var startPPID = os.Getppid()

// Watch returns a context that ends when ctx ends or when the process that started toolsift
// has died, and a stop function that ends the watch and waits for it (call it once).
func Watch(ctx context.Context, log *slog.Logger) (context.Context, func()) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// Owned by the stop function, which cancels it and waits.
	wg.Go(func() {
		if waitGone(ctx, startPPID) {
			log.Warn("the process that started toolsift has ended: stopping", "parent", startPPID)
			cancel()
		}
	})
	return ctx, func() {
		cancel()
		wg.Wait()
	}
}
