package clients

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/toolsift/toolsift/config"
)

// Render writes imp as a toolsift configuration that config.Load accepts, through the
// configuration's own writer (config.NewFile): servers in the order they were read, each
// under a comment saying where it came from and what could not be carried over; a project's
// servers (see Server.ProjectDir) under projects, so that toolsift serves them only there.
// home, if set, is written as ~ in those comments.
func Render(imp Import, home string) ([]byte, error) {
	head := []string{"toolsift configuration, imported from your MCP clients by `toolsift import`."}
	if len(imp.Sources) > 0 {
		head = append(head, "Read from:")
		for _, src := range imp.Sources {
			head = append(head, fmt.Sprintf("  %s (%s)", Tilde(src.Path, home), src.Kind))
		}
	}
	head = append(head, "Each server says where it came from; notes mark what could not be carried over as it",
		"was. Every key is described in toolsift's config.example.yaml.")
	var global []config.Named
	var projects []config.Project
	index := map[string]int{} // of each folder's in projects
	for _, s := range imp.Servers {
		dir := s.ProjectDir()
		if dir == "" {
			global = append(global, named(s, home))
			continue
		}
		i, ok := index[dir]
		if !ok {
			i, index[dir] = len(projects), len(projects)
			projects = append(projects, config.Project{Dir: dir})
		}
		projects[i].Servers = append(projects[i].Servers, named(s, home))
	}
	return config.NewFile(head, global, projects)
}

// named is s as the configuration writes it, under the comment that says where it came from.
func named(s Server, home string) config.Named {
	from := string(s.Source.Kind)
	if s.Scope != "" {
		from += ", " + Tilde(s.Scope, home)
	}
	first := fmt.Sprintf("from %s (%s)", Tilde(s.Source.Path, home), from)
	if s.Key != s.Name {
		first += " as " + config.Scalar(s.Key)
	}
	comment := []string{first}
	for _, n := range s.Notes {
		comment = append(comment, "note: "+strings.Join(strings.Fields(Tilde(n, home)), " "))
	}
	e := config.Entry{
		Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd, URL: s.URL, Headers: s.Headers,
		Description: s.Description, Allow: s.Allow, Deny: s.Deny,
		StartupTimeout: s.StartupTimeout, CallTimeout: s.CallTimeout, Disabled: s.Disabled,
	}
	// http is what a server with a url is by default; sse must be said.
	if s.Type == typeSSE {
		e.Type = "sse"
	}
	return config.Named{Name: s.Name, Entry: e, Comment: comment}
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
