package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/toolsift/toolsift/internal/dirs"
	"github.com/toolsift/toolsift/internal/terminal"
	"github.com/toolsift/toolsift/stats"
)

const statsUsage = `Usage: toolsift stats [--days 7] [--json]

Shows what toolsift saved and found, counted by every toolsift process of yours: tokens a
direct listing of your servers would have sent with each model request against what
toolsift sent, today and over the last days, by client and by server; searches, and the
likely misses (the model searched again, called another tool, or nothing) with their
queries. Days are UTC days. --json prints the same for scripts. docs/stats.md says how
each figure is counted.
`

func init() {
	register(command{
		name: "stats", synopsis: "[--days 7] [--json]",
		summary: "show the tokens toolsift saved, its searches and likely misses",
		help:    statsUsage, run: noStdin(statsCmd),
	})
}

// statsCmd prints the stats: toolsift stats.
func statsCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("stats", flag.ContinueOnError)
	days := fs.Int("days", 7, "")
	asJSON := fs.Bool("json", false, "")
	rest, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w: unexpected argument %q; stats takes only --days and --json", errUsage, rest[0])
	}
	if *days < 1 || *days > 30 {
		return fmt.Errorf("%w: --days %d: want 1 to 30 (searches are kept 30 days)", errUsage, *days)
	}
	store, err := statsStore()
	if err != nil {
		return err
	}
	rep, err := store.Report(time.Now(), *days)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	writeReport(stdout, rep, *days)
	return nil
}

// statsStore is the state folder's stats.
func statsStore() (*stats.Store, error) {
	dir, err := dirs.State()
	if err != nil {
		return nil, fmt.Errorf("no state folder to read stats from: %w", err)
	}
	return stats.Open(dir)
}

func writeReport(w io.Writer, rep *stats.Report, days int) {
	fmt.Fprintf(w, "Tokens counted with %s; days are UTC days.\n\n", rep.Encoding)
	fmt.Fprintf(w, "%-22s %9s %10s %9s %10s %9s %7s\n", "", "REQUESTS", "DIRECT", "SENT", "SAVED", "SEARCHES", "MISSES")
	row := func(r stats.Row) {
		fmt.Fprintf(w, "%-22s %9d %10s %9s %10s %9d %7d\n", terminal.Escape(r.Name), r.Requests,
			stats.Short(r.Direct), stats.Short(r.Sent), stats.Short(r.Saved), r.Searches, r.Misses)
	}
	row(rep.Today)
	row(rep.Week)
	if rep.Week.Requests == 0 && rep.Week.Searches == 0 {
		fmt.Fprintln(w, "\nNothing counted yet: the figures come from the sessions toolsift serves.")
		return
	}
	over := fmt.Sprintf("last %d days", days)
	fmt.Fprintf(w, "\nBy client, %s:\n", over)
	for _, r := range rep.Clients {
		row(r)
	}
	fmt.Fprintf(w, "\nBy server, %s (its tools' tokens; calls by outcome):\n", over)
	for _, r := range rep.Servers {
		var calls []string
		for _, k := range slices.Sorted(maps.Keys(r.Calls)) {
			calls = append(calls, fmt.Sprintf("%s %d", k, r.Calls[k]))
		}
		fmt.Fprintf(w, "%-22s %10s saved  %s\n", terminal.Escape(r.Name), stats.Short(r.Saved), strings.Join(calls, ", "))
	}
	fmt.Fprintf(w, "\nSessions, %s (%d; the 10 that saved most):\n", over, len(rep.Sessions))
	for _, r := range rep.Sessions[:min(len(rep.Sessions), 10)] {
		row(stats.Row{Name: r.Client, Saved: r.Saved, Tally: r.Tally})
	}
	fmt.Fprintf(w, "\nLikely misses, %s (%d):\n", over, len(rep.Misses))
	for _, m := range rep.Misses {
		fmt.Fprintf(w, "%s  %-14s %q: %s\n", m.Time.Local().Format("01-02 15:04"), terminal.Escape(m.Client),
			terminal.Escape(m.Query), describeMiss(m))
	}
}

// describeMiss says what followed a missed search.
func describeMiss(m stats.Search) string {
	s := m.Outcome
	if m.Used != "" {
		s += ", then called " + terminal.Escape(m.Used)
	}
	if len(m.Fixed) > 0 {
		s += " (keywords added: " + terminal.Escape(strings.Join(m.Fixed, ", ")) + ")"
	}
	return s
}
