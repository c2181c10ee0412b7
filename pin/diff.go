package pin

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Line is one line of a Diff: Op is ' ' (in both), '-' (only in the old) or '+' (only in
// the new).
type Line struct {
	Op   byte
	Text string
}

// Part is the changes of one part of a definition: "title", "description",
// "inputSchema", "outputSchema" or "annotations".
type Part struct {
	Name  string
	Lines []Line
}

// Compare is a readable comparison of two definitions: for each part that differs (the
// description, then each schema pretty-printed), its lines that differ with the lines around
// them. A part that did not change is left out.
func Compare(old, new Definition) []Part {
	var out []Part
	add := func(name, a, b string) {
		if a != b {
			out = append(out, Part{Name: name, Lines: Diff(a, b, 2)})
		}
	}
	add("title", old.Title, new.Title)
	add("description", old.Description, new.Description)
	add("inputSchema", pretty(old.InputSchema), pretty(new.InputSchema))
	add("outputSchema", pretty(old.OutputSchema), pretty(new.OutputSchema))
	add("annotations", pretty(old.Annotations), pretty(new.Annotations))
	return out
}

// Changes compares the version of e held for review with the one pinned, or with nothing
// when none was.
func (e Entry) Changes() []Part {
	var old Definition
	if e.Pinned != nil {
		old = e.Pinned.Definition
	}
	if e.Pending == nil {
		return nil
	}
	return Compare(old, e.Pending.Definition)
}

// pretty indents a JSON value with sorted keys, one member a line.
func pretty(raw json.RawMessage) string {
	c := canonical(raw)
	if len(c) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, c, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// Diff compares a and b line by line (a longest common subsequence), keeping context lines
// of each change and eliding the rest as a line "…".
func Diff(a, b string, context int) []Line {
	x, y := lines(a), lines(b)
	// lcs[i][j] is the length of the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var all []Line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			all = append(all, Line{' ', x[i]})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			all = append(all, Line{'-', x[i]})
			i++
		default:
			all = append(all, Line{'+', y[j]})
			j++
		}
	}
	keep := make([]bool, len(all))
	for k, l := range all {
		if l.Op != ' ' {
			for c := max(0, k-context); c <= min(len(all)-1, k+context); c++ {
				keep[c] = true
			}
		}
	}
	if !slices.Contains(keep, true) {
		return nil
	}
	var out []Line
	for k, l := range all {
		switch {
		case keep[k]:
			out = append(out, l)
		case len(out) == 0 || out[len(out)-1].Text != "…" || out[len(out)-1].Op != ' ':
			out = append(out, Line{' ', "…"})
		}
	}
	return out
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
