package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/toolsift/toolsift/search"
)

func init() {
	register(command{
		name: "eval", synopsis: "--cases FILE [--config FILE | --tools FILE...] [--k 1,3,5] [--min 5=0.9] [--json]",
		summary: "measure search recall@k and MRR on labelled queries",
		run:     noStdin(evalCmd),
	})
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
	rest, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if *casesFile == "" || len(rest) > 0 {
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
	r, err := cat.ranking(ctx, stderr)
	if err != nil {
		return err
	}
	defer r.close()
	// Through Find, as tool_search finds tools for a client that cannot sample.
	rep, err := search.Evaluate(r.f.Ranker(ctx), cases, ks)
	if err != nil {
		return fmt.Errorf("%s: %w", *casesFile, err)
	}
	r.report(stderr, len(cases))
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
