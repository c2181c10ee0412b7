package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// statusCmd starts the configured servers, waits for their first connection attempts, and
// prints each one's state, tool count, cache age and last error: toolsift status --config F.
func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	configFile := fs.String("config", "", "configuration `FILE`")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for servers to start")
	if done, err := parseFlags(fs, args, stdout); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q; status takes only flags", errUsage, fs.Arg(0))
	}
	file, err := findConfig(*configFile)
	if err != nil {
		return err
	}
	cfg, err := config.Load(file, nil)
	if err != nil {
		return err
	}
	// The cache is read for its age, but every server is started for real, lazy or not:
	// the point is to see whether it works.
	for i := range cfg.Servers {
		cfg.Servers[i].LazyStart = false
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pool := upstream.NewPool(cfg.Servers, upstream.Options{Logger: log, Version: buildVersion(), CacheDir: cacheDir(), CachedStartDelay: -1})
	defer pool.Close()
	cached := map[string]time.Time{}
	for _, st := range pool.Statuses() {
		cached[st.Name] = st.Cached
	}
	pool.Start()
	wctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	pool.WaitConnected(wctx)
	fmt.Fprintf(stdout, "%-20s %-10s %6s  %-12s %s\n", "SERVER", "STATE", "TOOLS", "CACHE AGE", "LAST ERROR")
	var bad []string
	for _, st := range pool.Statuses() {
		if !st.State.Usable() && st.State != upstream.StateDisabled {
			bad = append(bad, fmt.Sprintf("%s (%s)", st.Name, st.State))
		}
		age := "none"
		if !cached[st.Name].IsZero() {
			age = time.Since(cached[st.Name]).Round(time.Second).String()
		}
		errText := ""
		if st.Err != nil {
			errText = st.Err.Error()
		}
		fmt.Fprintf(stdout, "%-20s %-10s %6d  %-12s %s\n", st.Name, st.State, st.Tools, age, errText)
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d servers not working: %s; see LAST ERROR above, and Troubleshooting in the README", len(bad), len(cfg.Servers), strings.Join(bad, ", "))
	}
	return nil
}
