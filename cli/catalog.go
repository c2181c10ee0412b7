package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/toolsift/toolsift/embedding"
	"github.com/toolsift/toolsift/finder"
	"github.com/toolsift/toolsift/internal/redact"
	"github.com/toolsift/toolsift/upstream"
)

// catalogFlags are the flags that say where search and eval get their tools.
type catalogFlags struct {
	config string
	tools  repeated
	wait   time.Duration
}

func (c *catalogFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "read tools from the servers of this configuration `FILE` (default: the one toolsift serve finds)")
	fs.Var(&c.tools, "tools", "read tools from a tools/list JSON `FILE` (repeatable); its base name is the server's name")
	fs.DurationVar(&c.wait, "wait", 60*time.Second, "with --config, how long to wait for servers to start, and then for tool vectors (search.embeddings)")
}

// ranking is what search and eval find tools with: the finder tool_search uses, ranking
// by words or, with search.embeddings configured, by words and meaning.
type ranking struct {
	f   *finder.Finder
	emb *embedding.Engine // nil without embeddings
}

// close stops the finder and the embeddings engine, if any.
func (r ranking) close() {
	r.f.Close()
	if r.emb != nil {
		r.emb.Close()
	}
}

// report tells stderr how many of the queries were ranked by words alone because their
// vectors could not be had: those measure the words, not the configured ranking.
func (r ranking) report(stderr io.Writer, queries int) {
	if r.emb == nil {
		return
	}
	if n, err := r.emb.QueryFailures(); n > 0 {
		fmt.Fprintf(stderr, "toolsift: embeddings: %d of %d queries ranked by words alone: %v\n", n, queries, err)
	}
}

// ranking builds the ranking of the tools of --tools files, or of the live servers of
// --config; the caller closes it.
func (c *catalogFlags) ranking(ctx context.Context, stderr io.Writer) (ranking, error) {
	if c.config != "" && len(c.tools) > 0 {
		return ranking{}, fmt.Errorf("%w: give either --config FILE (search your servers) or --tools FILE... (search tools/list JSON files), not both", errUsage)
	}
	if len(c.tools) > 0 {
		var all []upstream.Tool
		for _, f := range c.tools {
			tools, err := upstream.LoadTools(f)
			if err != nil {
				return ranking{}, err
			}
			all = append(all, tools...)
		}
		f := finder.New(finder.Static{Tools: upstream.NewCatalog(all)}, finder.Options{IndexDelay: -1})
		return ranking{f: f}, nil
	}
	cfg, err := loadConfig(c.config, warnTo(stderr))
	if c.config == "" && err != nil {
		return ranking{}, fmt.Errorf("%w; or search tools/list JSON files with --tools FILE", err)
	}
	if err != nil {
		return ranking{}, err
	}
	red := redact.New(cfg.Secrets()...)
	log := slog.New(redact.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}), red))
	// No catalog cache here: search and eval measure what the servers list now.
	pool := upstream.NewPool(cfg.Servers, upstream.Options{Logger: log, Version: buildVersion(), Tokens: tokens()})
	defer pool.Close()
	pool.Start(upstream.Hooks{})
	wctx, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	if pending := pool.WaitStarted(wctx); len(pending) > 0 {
		fmt.Fprintf(stderr, "toolsift: still starting after %v, not searched: %s\n", c.wait, strings.Join(pending, ", "))
	}
	for _, st := range pool.Statuses() {
		if st.State == upstream.StateFailed {
			fmt.Fprintf(stderr, "toolsift: server %s unavailable: %s\n", st.Name, red.String(lastError(st)))
		}
	}
	// The catalog as it is now: the servers are closed once it is ranked.
	src := finder.Static{Tools: pool.Catalog()}
	emb := newEmbeddings(cfg, log, true)
	f := finder.New(src, finder.Options{Logger: log, Embeddings: emb, Groups: cfg.Groups, IndexDelay: -1})
	if emb != nil {
		// Unlike a server, which searches with the vectors it has, a measure waits for them
		// all (computed once, then read from the cache).
		vctx, cancel := context.WithTimeout(ctx, c.wait)
		defer cancel()
		if err := emb.Wait(vctx); err != nil {
			fmt.Fprintf(stderr, "toolsift: embeddings: %v; those tools rank by words alone\n", err)
		}
	}
	return ranking{f: f, emb: emb}, nil
}
