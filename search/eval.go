package search

import (
	"fmt"
	"os"
	"slices"

	"gopkg.in/yaml.v3"
)

// Case is one labelled query: any of Want is a right answer.
type Case struct {
	Query string
	Want  []string
}

// Miss is a case whose best wanted tool ranked below the largest k.
type Miss struct {
	Query string
	Want  []string
	// Rank is the best rank a wanted tool got, from 1; 0 means none ranked at all.
	Rank int
}

// Report is the outcome of an evaluation.
type Report struct {
	Cases int
	// Recall maps k to the share of cases with a wanted tool in the top k.
	Recall map[int]float64
	// MRR is the mean reciprocal rank of the best wanted tool (0 for a case with none).
	MRR    float64
	Misses []Miss
}

// Ranker is what Evaluate measures; *Index is one.
type Ranker interface {
	Search(q Query, limit int) (hits []Hit, unknown []string)
	Doc(name string) (Doc, bool)
}

// Evaluate ranks every case's query and measures recall at each k and MRR. A case that wants
// a tool the index lacks, or whose query does not parse, is an error: it would measure
// nothing.
func Evaluate(ix Ranker, cases []Case, ks []int) (Report, error) {
	r := Report{Cases: len(cases), Recall: map[int]float64{}}
	for _, k := range ks {
		r.Recall[k] = 0
	}
	if len(cases) == 0 || len(ks) == 0 {
		return r, fmt.Errorf("nothing to evaluate: %d cases, k in %v", len(cases), ks)
	}
	maxK := slices.Max(ks)
	for i, c := range cases {
		if len(c.Want) == 0 {
			return r, fmt.Errorf("case %d (%q) wants no tool", i+1, c.Query)
		}
		for _, w := range c.Want {
			if _, ok := ix.Doc(w); !ok {
				return r, fmt.Errorf("case %d (%q) wants %q, which is not in the catalog", i+1, c.Query, w)
			}
		}
		q, err := ParseQuery(c.Query)
		if err != nil {
			return r, fmt.Errorf("case %d: %w", i+1, err)
		}
		hits, _ := ix.Search(q, 0)
		rank := 0
		for j, h := range hits {
			if slices.Contains(c.Want, h.Name) {
				rank = j + 1
				break
			}
		}
		for _, k := range ks {
			if rank > 0 && rank <= k {
				r.Recall[k]++
			}
		}
		if rank > 0 {
			r.MRR += 1 / float64(rank)
		}
		if rank == 0 || rank > maxK {
			r.Misses = append(r.Misses, Miss{Query: c.Query, Want: c.Want, Rank: rank})
		}
	}
	n := float64(len(cases))
	for k := range r.Recall {
		r.Recall[k] /= n
	}
	r.MRR /= n
	return r, nil
}

// LoadCases reads a YAML list of cases, [{query, want}], where want is one tool name or a
// list of names, any of which is right.
func LoadCases(file string) ([]Case, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var raw []struct {
		Query string    `yaml:"query"`
		Want  yaml.Node `yaml:"want"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	cases := make([]Case, 0, len(raw))
	for i, r := range raw {
		c := Case{Query: r.Query}
		switch r.Want.Kind {
		case yaml.ScalarNode:
			c.Want = []string{r.Want.Value}
		case yaml.SequenceNode:
			if err := r.Want.Decode(&c.Want); err != nil {
				return nil, fmt.Errorf("%s:%d: want: %w", file, r.Want.Line, err)
			}
		default:
			return nil, fmt.Errorf("%s: case %d (%q): want is a tool name or a list of names", file, i+1, r.Query)
		}
		if c.Query == "" {
			return nil, fmt.Errorf("%s: case %d has no query", file, i+1)
		}
		cases = append(cases, c)
	}
	return cases, nil
}
