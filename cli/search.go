package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/toolsift/toolsift/finder"
	"github.com/toolsift/toolsift/search"
)

func init() {
	register(command{
		name: "search", synopsis: "[--config FILE | --tools FILE...] [-n 10] QUERY",
		summary: "print the tools a query finds, ranked as tool_search ranks them",
		run:     noStdin(searchCmd),
	})
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
		return fmt.Errorf("%w: no query: put it after the flags, as in: toolsift search create issue (add --config FILE for another configuration)", errUsage)
	}
	q, err := search.ParseQuery(query)
	if err != nil {
		return fmt.Errorf("%w: query %q: %v: give words a tool's name or description would hold, as in: toolsift search create issue (+word requires a word, server:NAME searches one server, select:a,b fetches by name, group:NAME a group's or a server's tools)", errUsage, query, err)
	}
	r, err := cat.ranking(ctx, stderr)
	if err != nil {
		return err
	}
	defer r.close()
	// As tool_search finds them, for a client that cannot sample.
	found, err := r.f.Find(ctx, finder.Request{Query: q, Text: query, Limit: *n})
	if err != nil {
		return err
	}
	r.report(stderr, 1)
	for i, h := range found.Hits {
		why := ""
		if h.Why != finder.ByWords && h.Why != finder.ByMeaning {
			why = " (" + string(h.Why) + ")"
		}
		fmt.Fprintf(stdout, "%3d %8.3f  %-45s %s%s\n", i+1, h.Score, h.Tool.Exposed, search.FirstLine(h.Tool.Description, 80), why)
	}
	for _, u := range found.Unknown {
		fmt.Fprintf(stdout, "unknown: %s\n", u)
	}
	if len(found.Hits) == 0 {
		fmt.Fprintln(stdout, "no tool matched")
	}
	return nil
}
