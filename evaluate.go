package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/proxy"
	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
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
	if c.config == "" && len(c.tools) == 0 {
		file, err := findConfig("")
		if err != nil {
			return nil, fmt.Errorf("%w; or search tools/list JSON files with --tools FILE", err)
		}
		c.config = file
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
	cfg, err := config.Load(c.config, nil)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// No cache here: search and eval measure what the servers list now.
	pool := upstream.NewPool(cfg.Servers, upstream.Options{Logger: log, Version: buildVersion()})
	defer pool.Close()
	pool.Start()
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
	if done, err := parseFlags(fs, args, stdout); done || err != nil {
		return err
	}
	query := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(query) == "" {
		return fmt.Errorf("%w: no query: put it after the flags, as in: toolsift search --config toolsift.yaml create issue", errUsage)
	}
	q, err := search.ParseQuery(query)
	if err != nil {
		return fmt.Errorf("%w: query %q: %v", errUsage, query, err)
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

// evalCmd measures recall@k and MRR of labelled cases: toolsift eval --cases FILE [flags].
func evalCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	var cat catalogFlags
	cat.register(fs)
	casesFile := fs.String("cases", "", "YAML `FILE` of cases: [{query, want: name or [names]}]")
	kList := fs.String("k", "1,3,5", "comma-separated cut-offs for recall@k")
	asJSON := fs.Bool("json", false, "print one JSON object")
	minimum := fs.String("min", "", "fail unless recall meets these floors, e.g. 1=0.70,5=0.90")
	if done, err := parseFlags(fs, args, stdout); done || err != nil {
		return err
	}
	if *casesFile == "" || fs.NArg() > 0 {
		return fmt.Errorf("%w: eval takes --cases FILE and either --config FILE or --tools FILE..., and no other arguments; run 'toolsift eval --help'", errUsage)
	}
	ks, err := parseKs(*kList)
	if err != nil {
		return err
	}
	floors, err := parseFloors(*minimum)
	if err != nil {
		return err
	}
	cases, err := search.LoadCases(*casesFile)
	if err != nil {
		return err
	}
	ix, err := cat.index(ctx, stderr)
	if err != nil {
		return err
	}
	rep, err := search.Evaluate(ix, cases, ks)
	if err != nil {
		return fmt.Errorf("%s: %w", *casesFile, err)
	}
	if *asJSON {
		err = printJSON(stdout, rep)
	} else {
		printReport(stdout, rep, ks)
	}
	if err != nil {
		return err
	}
	var short []string
	for k, floor := range floors {
		if r, ok := rep.Recall[k]; !ok || r < floor {
			short = append(short, fmt.Sprintf("recall@%d %.3f < %.2f", k, rep.Recall[k], floor))
		}
	}
	if len(short) > 0 {
		sort.Strings(short)
		return errors.New("below the floor: " + strings.Join(short, ", "))
	}
	return nil
}

func parseKs(s string) ([]int, error) {
	var ks []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			return nil, fmt.Errorf("%w: --k %q: want positive whole numbers, as in 1,3,5", errUsage, s)
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return slices.Compact(ks), nil
}

func parseFloors(s string) (map[int]float64, error) {
	floors := map[int]float64{}
	if s == "" {
		return floors, nil
	}
	for _, f := range strings.Split(s, ",") {
		ks, vs, ok := strings.Cut(f, "=")
		k, err1 := strconv.Atoi(strings.TrimSpace(ks))
		v, err2 := strconv.ParseFloat(strings.TrimSpace(vs), 64)
		if !ok || err1 != nil || err2 != nil || k < 1 || v < 0 || v > 1 {
			return nil, fmt.Errorf("%w: --min %q: want k=recall pairs, as in 1=0.70,5=0.90", errUsage, s)
		}
		floors[k] = v
	}
	return floors, nil
}

func printReport(w io.Writer, rep search.Report, ks []int) {
	fmt.Fprintf(w, "cases  %d\n", rep.Cases)
	for _, k := range ks {
		fmt.Fprintf(w, "recall@%-2d %.3f\n", k, rep.Recall[k])
	}
	fmt.Fprintf(w, "MRR       %.3f\n", rep.MRR)
	if len(rep.Misses) == 0 {
		return
	}
	fmt.Fprintf(w, "misses (not in the top %d; rank 0 = not ranked):\n", slices.Max(ks))
	for _, m := range rep.Misses {
		fmt.Fprintf(w, "  rank %-4d %s  →  %s\n", m.Rank, m.Query, strings.Join(m.Want, " | "))
	}
}

func printJSON(w io.Writer, rep search.Report) error {
	type miss struct {
		Query string `json:"query"`
		Want  any    `json:"want"`
		Rank  int    `json:"rank"`
	}
	out := struct {
		Cases  int                `json:"cases"`
		Recall map[string]float64 `json:"recall"`
		MRR    float64            `json:"mrr"`
		Misses []miss             `json:"misses"`
	}{Cases: rep.Cases, Recall: map[string]float64{}, MRR: rep.MRR, Misses: []miss{}}
	for k, r := range rep.Recall {
		out.Recall[strconv.Itoa(k)] = r
	}
	for _, m := range rep.Misses {
		var want any = m.Want
		if len(m.Want) == 1 {
			want = m.Want[0]
		}
		out.Misses = append(out.Misses, miss{Query: m.Query, Want: want, Rank: m.Rank})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

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
