// Command toolsift is an MCP proxy that aggregates many upstream MCP servers and exposes
// their tools lazily: a client sees a few tools and a search, and unlocks the rest by need.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolsift/toolsift/internal/terminal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		// An error can quote a remote's or a repo's text: escaped, it cannot act on the terminal.
		fmt.Fprintln(os.Stderr, "toolsift:", terminal.Lines(err.Error()))
		os.Exit(exitCode(err))
	}
}
