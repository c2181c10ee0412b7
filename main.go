// Command toolsift is an MCP proxy that aggregates many upstream MCP servers and exposes
// their tools lazily: a client sees a few tools and a search, and unlocks the rest by need.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolsift/toolsift/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
