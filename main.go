// Command toolsift is an MCP proxy that aggregates many upstream MCP servers and exposes
// their tools lazily: a client sees a few tools and a search, and unlocks the rest by need.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolsift:", err)
		os.Exit(exitCode(err))
	}
}
