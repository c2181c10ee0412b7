package clients

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Merge combines imports in order. A name seen again is imported once when its settings are
// the same; otherwise the later server is renamed and disabled, so that nothing is lost and
// no tool is listed twice.
func Merge(imps ...Import) Import {
	var out Import
	for _, imp := range imps {
		out.Sources = append(out.Sources, imp.Sources...)
		out.Warnings = append(out.Warnings, imp.Warnings...)
		for _, s := range imp.Servers {
			out.add(s)
		}
	}
	return out
}

// add appends s unless a server of that name is there already (see Merge), and returns the
// name s has in the configuration.
func (imp *Import) add(s Server) string {
	i := slices.IndexFunc(imp.Servers, func(o Server) bool { return o.Name == s.Name })
	if i < 0 {
		imp.Servers = append(imp.Servers, s)
		return s.Name
	}
	prev := imp.Servers[i]
	w := newWarning(s.Source.Path, s.Key, s.Scope, "")
	if sameServer(prev, s) {
		w.Msg = fmt.Sprintf("same as %q from %s: imported once", prev.Name, where(prev))
		imp.Warnings = append(imp.Warnings, w)
		imp.Servers[i].Notes = append(imp.Servers[i].Notes, fmt.Sprintf("also in %s", where(s)))
		return prev.Name
	}
	name := uniqueName(s.Name, imp.Servers)
	w.Msg = fmt.Sprintf("%q from %s has other settings: imported as %q, disabled; compare the two, then delete one or enable it", prev.Name, where(prev), name)
	imp.Warnings = append(imp.Warnings, w)
	s.Notes = append(s.Notes, w.Msg)
	s.Name = name
	s.Disabled = true
	imp.Servers = append(imp.Servers, s)
	return name
}

// where names the file s came from, and its place in the file if the file has several.
func where(s Server) string {
	if s.Scope != "" {
		return s.Source.Path + " (" + s.Scope + ")"
	}
	return s.Source.Path
}

// sameServer reports whether two servers start the same thing the same way.
func sameServer(a, b Server) bool {
	return a.Type == b.Type && a.Command == b.Command && slices.Equal(a.Args, b.Args) &&
		maps.Equal(a.Env, b.Env) && a.Cwd == b.Cwd && a.URL == b.URL && maps.Equal(a.Headers, b.Headers) &&
		slices.Equal(a.Allow, b.Allow) && slices.Equal(a.Deny, b.Deny) && a.Disabled == b.Disabled
}

// maxName is the longest server name whose default prefix toolsift accepts.
const maxName = 40

// validName matches the server names toolsift accepts.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,` + strconv.Itoa(maxName) + `}$`)

// sanitize makes a client's server name a valid toolsift name: runs of other characters
// become one -, and the name is cut to maxName characters.
func sanitize(name string) string {
	if validName.MatchString(name) {
		return name
	}
	var b strings.Builder
	dash := false
	for _, r := range name {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > maxName {
		s = strings.TrimRight(s[:maxName], "-")
	}
	if s == "" {
		s = "server"
	}
	return s
}

// uniqueName returns name-2, name-3 … whichever is free.
func uniqueName(name string, taken []Server) string {
	for i := 2; ; i++ {
		suffix := fmt.Sprintf("-%d", i)
		base := name
		if len(base)+len(suffix) > maxName {
			base = base[:maxName-len(suffix)]
		}
		cand := base + suffix
		if !slices.ContainsFunc(taken, func(s Server) bool { return s.Name == cand }) {
			return cand
		}
	}
}
