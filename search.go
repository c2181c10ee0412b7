package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/toolsift/toolsift/proxy"
	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// catalogFlags are the flags that say where search and eval get their tools.
type catalogFlags struct {
	config string
	tools  listFlag
	wait   time.Duration
}

func (c *catalogFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "read tools from the servers of this configuration `FILE` (default: the one toolsift serve finds)")
	fs.Var(&c.tools, "tools", "read tools from a tools/list JSON `FILE` (repeatable); its base name is the server's name")
	fs.DurationVar(&c.wait, "wait", 60*time.Second, "with --config, how long to wait for servers to start")
}

// index builds a search index from --tools files or from the live servers of --config.
func (c *catalogFlags) index(ctx context.Context, stderr io.Writer) (*search.Index, error) {
	if c.config != "" && len(c.tools) > 0 {
		return nil, fmt.Errorf("%w: give either --config FILE (search your servers) or --tools FILE... (search tools/list JSON files), not both", errUsage)
	}
	if len(c.tools) > 0 {
		var all []upstream.Tool
		for _, f := range c.tools {
			tools, err := upstream.LoadTools(f)
			if err != nil {
				return nil, err
			}
			all = append(all, tools...)
		}
		return proxy.NewIndex(upstream.NewCatalog(all)), nil
	}
	cfg, err := loadConfig(c.config)
	if c.config == "" && err != nil {
		return nil, fmt.Errorf("%w; or search tools/list JSON files with --tools FILE", err)
	}
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// No cache here: search and eval measure what the servers list now.
	pool := upstream.NewPool(cfg.Servers, upstream.Options{Logger: log, Version: buildVersion()})
	defer pool.Close()
	pool.Start(upstream.Hooks{})
	wctx, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	if pending := pool.WaitStarted(wctx); len(pending) > 0 {
		fmt.Fprintf(stderr, "toolsift: still starting after %v, not searched: %s\n", c.wait, strings.Join(pending, ", "))
	}
	for _, st := range pool.Statuses() {
		if st.State == upstream.StateFailed {
			fmt.Fprintf(stderr, "toolsift: server %s unavailable: %v\n", st.Name, st.Err)
		}
	}
	return proxy.NewIndex(pool.Catalog()), nil
}

// searchCmd prints the ranked tools for a query: toolsift search [flags] QUERY.
func searchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	var cat catalogFlags
	cat.register(fs)
	n := fs.Int("n", 10, "how many tools to print")
	rest, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	query := strings.Join(rest, " ")
	if strings.TrimSpace(query) == "" {
		return fmt.Errorf("%w: no query: put it after the flags, as in: toolsift search --config toolsift.yaml create issue", errUsage)
	}
	q, err := search.ParseQuery(query)
	if err != nil {
		return fmt.Errorf("%w: query %q: %v: give words a tool's name or description would hold, as in: toolsift search create issue (+word requires a word, server:NAME searches one server, select:a,b fetches by name)", errUsage, query, err)
	}
	if q.Group != "" {
		return fmt.Errorf("%w: group:%s unlocks tools in a client's session and ranks nothing; to see a server's tools here, search server:%s with a word or two", errUsage, q.Group, q.Group)
	}
	ix, err := cat.index(ctx, stderr)
	if err != nil {
		return err
	}
	hits, unknown := ix.Search(q, *n)
	for i, h := range hits {
		d, _ := ix.Doc(h.Name)
		fmt.Fprintf(stdout, "%3d %8.3f  %-45s %s\n", i+1, h.Score, h.Name, proxy.FirstLine(d.Description, 80))
	}
	for _, u := range unknown {
		fmt.Fprintf(stdout, "unknown: %s\n", u)
	}
	if len(hits) == 0 {
		fmt.Fprintln(stdout, "no tool matched")
	}
	return nil
}
