package clients

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Render writes imp as a toolsift configuration that config.Load accepts: servers in the
// order they were read, each under a comment saying where it came from and what could not
// be carried over; a project's servers (see Server.ProjectDir) under projects, so that
// toolsift serves them only there. home, if set, is written as ~ in those comments.
func Render(imp Import, home string) []byte {
	var b bytes.Buffer
	b.WriteString("# toolsift configuration, imported from your MCP clients by `toolsift import`.\n")
	if len(imp.Sources) > 0 {
		b.WriteString("# Read from:\n")
		for _, src := range imp.Sources {
			fmt.Fprintf(&b, "#   %s (%s)\n", Tilde(src.Path, home), src.Kind)
		}
	}
	b.WriteString("# Each server says where it came from; notes mark what could not be carried over as it\n")
	b.WriteString("# was. Every key is described in toolsift's config.example.yaml.\n\n")
	var global []Server
	var dirs []string
	byDir := map[string][]Server{}
	for _, s := range imp.Servers {
		dir := s.ProjectDir()
		if dir == "" {
			global = append(global, s)
			continue
		}
		if byDir[dir] == nil {
			dirs = append(dirs, dir)
		}
		byDir[dir] = append(byDir[dir], s)
	}
	if len(global) == 0 {
		b.WriteString("mcpServers: {}\n")
	} else {
		b.WriteString("mcpServers:\n")
	}
	for i, s := range global {
		if i > 0 {
			b.WriteByte('\n')
		}
		renderServer(&b, s, home)
	}
	if len(dirs) > 0 {
		b.WriteString("\n# Served only when a client starts toolsift in that folder.\nprojects:\n")
	}
	for _, dir := range dirs {
		fmt.Fprintf(&b, "  %s:\n    mcpServers:\n", yamlString(dir))
		for i, s := range byDir[dir] {
			if i > 0 {
				b.WriteByte('\n')
			}
			var one bytes.Buffer
			renderServer(&one, s, home)
			for line := range strings.Lines(one.String()) {
				b.WriteString("    " + line)
			}
		}
	}
	return b.Bytes()
}

func renderServer(b *bytes.Buffer, s Server, home string) {
	from := string(s.Source.Kind)
	if s.Scope != "" {
		from += ", " + Tilde(s.Scope, home)
	}
	fmt.Fprintf(b, "  # from %s (%s)", Tilde(s.Source.Path, home), from)
	if s.Key != s.Name {
		fmt.Fprintf(b, " as %s", yamlString(s.Key))
	}
	b.WriteByte('\n')
	for _, n := range s.Notes {
		fmt.Fprintf(b, "  # note: %s\n", oneLine(Tilde(n, home)))
	}
	fmt.Fprintf(b, "  %s:\n", yamlString(s.Name))
	field := func(key, value string) { fmt.Fprintf(b, "    %s: %s\n", key, value) }
	// http is what a server with a url is by default; sse must be said.
	if s.Type == typeSSE {
		field("type", "sse")
	}
	if s.Command != "" {
		field("command", yamlString(s.Command))
	}
	if len(s.Args) > 0 {
		list(b, "args", s.Args)
	}
	if len(s.Env) > 0 {
		mapping(b, "env", s.Env)
	}
	if s.Cwd != "" {
		field("cwd", yamlString(s.Cwd))
	}
	if s.URL != "" {
		field("url", quoted(s.URL))
	}
	if len(s.Headers) > 0 {
		mapping(b, "headers", s.Headers)
	}
	if s.Description != "" {
		field("description", quoted(s.Description))
	}
	if len(s.Allow) > 0 {
		list(b, "allow", s.Allow)
	}
	if len(s.Deny) > 0 {
		list(b, "deny", s.Deny)
	}
	if s.StartupTimeout > 0 {
		field("startupTimeout", duration(s.StartupTimeout))
	}
	if s.CallTimeout > 0 {
		field("callTimeout", duration(s.CallTimeout))
	}
	if s.Disabled {
		field("disabled", "true")
	}
}

// list writes a flow list, or a block list when that would make a line too long to read.
func list(b *bytes.Buffer, key string, items []string) {
	q := make([]string, len(items))
	for i, it := range items {
		q[i] = quoted(it)
	}
	flow := "[" + strings.Join(q, ", ") + "]"
	if len(flow)+len(key)+6 <= 100 {
		fmt.Fprintf(b, "    %s: %s\n", key, flow)
		return
	}
	fmt.Fprintf(b, "    %s:\n", key)
	for _, it := range q {
		fmt.Fprintf(b, "      - %s\n", it)
	}
}

func mapping(b *bytes.Buffer, key string, m map[string]string) {
	fmt.Fprintf(b, "    %s:\n", key)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(b, "      %s: %s\n", yamlString(k), quoted(m[k]))
	}
}

// plain matches strings YAML reads back as the same string without quotes.
var plain = regexp.MustCompile(`^[A-Za-z_/.][A-Za-z0-9_./+-]*$`)

// yamlString writes s plain when that is unambiguous, else double-quoted.
func yamlString(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ".inf", ".nan":
		return quoted(s)
	}
	if plain.MatchString(s) {
		return s
	}
	return quoted(s)
}

// quoted writes s as a YAML double-quoted string: a JSON string is one, as JSON's escapes
// are a subset of YAML's.
func quoted(s string) string { return jsonString(s) }

func duration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// Tilde writes the paths in s that are under home as ~/…, which is shorter and the same
// on every machine.
func Tilde(s, home string) string {
	if home == "" || home == "/" {
		return s
	}
	home = filepath.Clean(home)
	return strings.ReplaceAll(s, home+string(filepath.Separator), "~"+string(filepath.Separator))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
