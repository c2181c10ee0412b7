package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/toolsift/toolsift/dashboard"
	"github.com/toolsift/toolsift/habit"
	"github.com/toolsift/toolsift/internal/redact"
	"github.com/toolsift/toolsift/internal/terminal"
	"github.com/toolsift/toolsift/state"
	"github.com/toolsift/toolsift/upstream"
)

func init() {
	register(command{
		name: "status", synopsis: "[--config FILE] [--wait 30s]",
		summary: "start every server, show each one's state, tools and last error; warms the catalog cache",
		run:     noStdin(statusCmd),
	})
}

// statusCmd starts the configured servers, waits for their first connection attempts, and
// prints each one's state, tool count, cache age and last error: toolsift status --config F.
func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	configFile := fs.String("config", "", "configuration `FILE`")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for servers to start")
	verbose := fs.Bool("verbose", false, "show the last lines each failed server printed")
	rest, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w: unexpected argument %q; status takes only flags", errUsage, rest[0])
	}
	cfg, err := loadConfig(*configFile, warnTo(stderr))
	if err != nil {
		return err
	}
	// The cache is read for its age, but every server is started for real, lazy or not:
	// the point is to see whether it works.
	for i := range cfg.Servers {
		cfg.Servers[i].LazyStart = false
	}
	red := redact.New(cfg.Secrets()...)
	log := slog.New(slog.DiscardHandler)
	// A team's service (auth.oidc) signs each person in to OAuth servers for themselves.
	team := cfg.HTTP.OIDC != nil
	pins, _, closePins, err := openPins(ctx, cfg, nil, log)
	if err != nil {
		return err
	}
	defer closePins()
	pool := upstream.NewPool(cfg.Servers, upstream.Options{Logger: log, Version: buildVersion(), CacheDir: cacheDir(), CachedStartDelay: -1, Tokens: tokens(), PerUser: team, Pins: pins})
	defer pool.Close()
	cached := map[string]time.Time{}
	for _, st := range pool.Statuses() {
		cached[st.Name] = st.Cached
	}
	pool.Start(upstream.Hooks{})
	wctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	pool.WaitConnected(wctx)
	fmt.Fprintf(stdout, "%s\n\n", configLine(cfg))
	fmt.Fprintf(stdout, "%-20s %-10s %6s  %-12s %s\n", "SERVER", "STATE", "TOOLS", "CACHE AGE", "LAST ERROR")
	var failed, starting, login []string
	for _, st := range pool.Statuses() {
		switch st.State {
		case upstream.StateFailed:
			failed = append(failed, st.Name)
		case upstream.StateStarting:
			starting = append(starting, st.Name)
		case upstream.StateNeedsLogin:
			login = append(login, st.Name)
		}
		age := "none"
		if !cached[st.Name].IsZero() {
			age = time.Since(cached[st.Name]).Round(time.Second).String()
		}
		fmt.Fprintf(stdout, "%-20s %-10s %6d  %-12s %s\n", st.Name, st.State, st.Tools, age, red.String(lastError(st)))
		if *verbose && st.StderrTail != "" {
			for line := range strings.Lines(st.StderrTail) {
				fmt.Fprintf(stdout, "    | %s\n", red.String(strings.TrimRight(line, "\n")))
			}
		}
	}
	if team {
		showSignIns(stdout, pool.Statuses())
	}
	var sharedProblem string
	if url := cfg.State.RedisURL; url != "" {
		sharedProblem = showShared(ctx, stdout, url)
	}
	cat := settledCatalog(pool)
	showAlwaysLoaded(stdout, cat)
	showHeldTools(stdout, cat)
	if clients := openHabits(log); clients != nil {
		showClients(stdout, clients.All())
	}
	if len(cfg.Servers) == 0 && len(cfg.Projects) > 0 {
		n := 0
		for _, servers := range cfg.Projects {
			n += len(servers)
		}
		fmt.Fprintf(stdout, "(none here: %s belong to projects, served only in their folders; run toolsift status in one of them)\n", plural(n, "server"))
	}
	var problems []string
	if sharedProblem != "" {
		problems = append(problems, sharedProblem)
	}
	if len(failed) > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d servers failed: %s (see LAST ERROR above; --verbose shows their last lines of output)",
			len(failed), len(cfg.Servers), strings.Join(failed, ", ")))
	}
	if n := len(cat.Held); n > 0 {
		problems = append(problems, fmt.Sprintf("%s held for review (a definition changed or looks poisoned): run toolsift review", plural(n, "tool")))
	}
	for _, name := range login {
		problems = append(problems, fmt.Sprintf("%s needs you to sign in: run toolsift auth login %s", name, name))
	}
	if len(starting) > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d servers still starting after %v: %s (a first npx start downloads the server; run again with --wait 2m)",
			len(starting), len(cfg.Servers), *wait, strings.Join(starting, ", ")))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// settledCatalog is the pool's catalog once it holds the tools the servers' statuses count:
// it is built from their lists just after they connect. It waits a second at most.
func settledCatalog(pool *upstream.Pool) *upstream.Catalog {
	deadline := time.Now().Add(time.Second)
	for {
		want := 0
		for _, st := range pool.Statuses() {
			want += st.Tools
		}
		cat := pool.Catalog()
		if len(cat.Tools) >= want || time.Now().After(deadline) {
			return cat
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// showAlwaysLoaded lists the tools every session is shown from the start, and their size:
// each is resent with every model request.
func showAlwaysLoaded(stdout io.Writer, cat *upstream.Catalog) {
	var names []string
	total := 0
	for _, t := range cat.Tools {
		if !t.AlwaysLoad {
			continue
		}
		size := len(t.Exposed) + len(t.Title) + len(t.Description) + len(t.InputSchema) + len(t.OutputSchema) + len(t.Annotations) + len(t.Meta)
		total += size
		names = append(names, fmt.Sprintf("%s (%.1f KB)", t.Exposed, float64(size)/1000))
	}
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(stdout, "\nalways loaded, in every session's list from the start: %s, %.1f KB: %s\n", plural(len(names), "tool"), float64(total)/1000, strings.Join(names, ", "))
	fmt.Fprintln(stdout, "  to load one only when searched for: under its server, tools: {NAME: {alwaysLoad: false}}; alwaysLoad: false for all of a server's")
}

// lastError is a server's last error for its user to read, with what the server printed
// about it; "" if there is none.
func lastError(st upstream.Status) string {
	if st.Err == nil {
		return ""
	}
	if st.Stderr != "" {
		return st.Err.Error() + "; stderr: " + st.Stderr
	}
	return st.Err.Error()
}

// showSignIns says, for a team's service, which servers each person signs in to for
// themselves and which act with one credential for everyone.
func showSignIns(w io.Writer, statuses []upstream.Status) {
	var perUser, shared []string
	for _, st := range statuses {
		if st.PerUser {
			perUser = append(perUser, st.Name)
		} else {
			shared = append(shared, st.Name)
		}
	}
	if len(perUser) > 0 {
		fmt.Fprintf(w, "\nper user, each person signs in for themselves: %s\n", strings.Join(perUser, ", "))
	}
	if len(shared) > 0 {
		fmt.Fprintf(w, "shared, one credential acts for everyone (headers, env, or a local process): %s\n", strings.Join(shared, ", "))
	}
}

// showShared says whether the shared state (state.redis) answers; it returns the problem,
// or "".
func showShared(ctx context.Context, w io.Writer, url string) string {
	r, err := state.Open(ctx, url, time.Minute)
	if err == nil {
		defer r.Close()
		err = r.Healthy(ctx)
	}
	if err != nil {
		fmt.Fprintf(w, "\nshared state: %s unreachable (%v): each replica serves only the sessions it knows\n", redact.URL(url), err)
		return fmt.Sprintf("the shared state (state.redis.url) cannot be reached: %v", err)
	}
	fmt.Fprintf(w, "\nshared state: %s answers; every replica serves every session\n", redact.URL(url))
	return ""
}

// showHeldTools lists the tools held for review, each with why.
func showHeldTools(w io.Writer, cat *upstream.Catalog) {
	if len(cat.Held) == 0 {
		return
	}
	fmt.Fprintf(w, "\nheld for review, not listed, searched or callable (toolsift review shows what changed):\n")
	for _, h := range cat.Held {
		fmt.Fprintf(w, "  %s: %s\n", h.Exposed, terminal.Escape(h.Why.String()))
	}
}

// showClients lists the clients seen, each with how toolsift treats it after a search that
// unlocked tools, and where that comes from.
func showClients(w io.Writer, clients []habit.Client) {
	if len(clients) == 0 {
		return
	}
	fmt.Fprintf(w, "\nclients seen, and whether a search waits for them to re-list its tools:\n")
	for _, c := range dashboardClients(clients) {
		fmt.Fprintf(w, "  %-28s %-52s %s\n", terminal.Escape(c.Name), c.Habit, c.From)
	}
}

// dashboardClients says, for each client, its name and major version, its habit and where
// that comes from.
func dashboardClients(clients []habit.Client) []dashboard.Client {
	out := make([]dashboard.Client, len(clients))
	for i, c := range clients {
		name := c.Name
		if c.Major != "" {
			name += " " + c.Major
		}
		from := "known"
		if !c.Known {
			from = "learned on " + c.Learned.UTC().Format(time.DateOnly)
		}
		out[i] = dashboard.Client{Name: name, Habit: habitText(c), From: from}
	}
	return out
}

// habitText says what toolsift does for a client of that habit.
func habitText(c habit.Client) string {
	switch {
	case c.Relists:
		return "waits: it re-lists before reading the result"
	case c.Late:
		return "does not wait: it re-lists only after the result"
	}
	return "does not wait: it does not re-list mid-turn"
}
