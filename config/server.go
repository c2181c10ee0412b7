package config

import (
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

func (p *parser) server(name string, n *yaml.Node, at string) Server {
	s := Server{Name: name, Prefix: name, Pin: PinChanges}
	p.current = at
	defer func() { p.current = "" }()
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping (command/args or type/url), got %s", kindName(n))
		return s
	}
	var typeNode, idleNode, oauthNode *yaml.Node
	p.fields(n, at, func(key string, v *yaml.Node, at string) {
		p.set[at] = true
		switch key {
		case "type", "transport":
			typeNode = v
			s.Type = p.str(v, at)
		case "command":
			s.Command = p.str(v, at)
		case "args":
			s.Args = p.strList(v, at)
		case "env":
			s.Env = p.strMap(v, at)
		case "cwd":
			s.Cwd = p.str(v, at)
		case "url":
			s.URL = p.str(v, at)
		case "headers":
			s.Headers = p.strMap(v, at)
		case "prefix":
			s.Prefix = p.str(v, at)
		case "description":
			s.Description = p.str(v, at)
		case "alwaysLoad":
			if v.Kind == yaml.ScalarNode && v.Tag == "!!bool" {
				s.AlwaysLoadAll = p.bool(v, at)
				s.AlwaysLoadOff = !s.AlwaysLoadAll
			} else {
				s.AlwaysLoad = p.patterns(v, at)
			}
		case "allow":
			s.Allow = p.patterns(v, at)
		case "deny":
			s.Deny = p.patterns(v, at)
		case "disabled":
			s.Disabled = p.bool(v, at)
		case "tools":
			s.Tools = p.toolOverrides(v, at)
		case "callTimeout":
			s.CallTimeout = p.duration(v, at)
		case "maxResultBytes":
			s.MaxResultBytes = p.positive(v, at)
		case "concurrency":
			s.Concurrency = p.positive(v, at)
		case "startupTimeout":
			s.StartupTimeout = p.duration(v, at)
		case "lazyStart":
			s.LazyStart = p.bool(v, at)
		case "idleTimeout":
			idleNode = v
			s.IdleTimeout = p.duration(v, at)
		case "oauth":
			oauthNode = v
			s.OAuth = p.oauth(v, at)
		case "access":
			s.Access = p.access(v, at)
		case "pin":
			switch s.Pin = p.str(v, at); s.Pin {
			case PinChanges, PinAll, PinOff:
			default:
				p.errorf(v, at, "%q is not a pin mode: want changes (hold a tool whose definition changes), all (hold new tools too until approved) or off", s.Pin)
			}
		default:
			p.unknownKey(v, at, key, serverKeys)
		}
	})
	if unset := p.unset[at]; len(unset) > 0 {
		// What an unset variable left empty is not checked: the variable is the error.
		s.Disabled, s.Broken = true, strings.Join(unset, "; ")
		return s
	}
	switch {
	case s.Type == "" && s.Command != "":
		s.Type = TypeStdio
	case s.Type == "" && s.URL != "":
		s.Type = TypeHTTP
	case s.Type == "streamable-http" || s.Type == "streamableHttp":
		s.Type = TypeHTTP
	}
	switch s.Type {
	case "":
		if !p.guessed[at+".command"] && !p.guessed[at+".url"] {
			p.errorf(n, at, "neither command (a program to start) nor url (a server to reach) is set")
		}
	case TypeStdio:
		if s.Command == "" {
			p.errorf(n, at+".command", "missing: a stdio server needs a command")
		}
		if oauthNode != nil {
			p.errorf(oauthNode, at+".oauth", "only an http or sse server signs in with OAuth")
		}
		if s.URL != "" {
			p.errorf(n, at+".url", "a stdio server takes command, not url")
		}
	case TypeHTTP, TypeSSE:
		if s.URL == "" {
			p.errorf(n, at+".url", "missing: a %s server needs a url", s.Type)
		} else if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.errorf(n, at+".url", "%q is not an http(s) URL", s.URL)
		}
		if s.Command != "" {
			p.errorf(n, at+".command", "a %s server takes url, not command", s.Type)
		}
		if idleNode != nil {
			p.errorf(idleNode, at+".idleTimeout", "only a stdio server can be stopped when idle")
		}
	default:
		p.errorf(typeNode, at+".type", "%q is not a server type (want stdio, http or sse)", s.Type)
	}
	return s
}

// validate checks what spans servers served together; nodes locates each server by its key
// path (see Server.Path).
func (p *parser) validate(servers []Server, nodes map[string]*yaml.Node) {
	byPrefix := map[string]string{}
	for _, s := range servers {
		if s.Disabled {
			continue
		}
		n := nodes[s.Path()]
		at := s.Path() + ".prefix"
		if !validPrefix.MatchString(s.Prefix) {
			p.errorf(n, at, "%q may use only letters, digits, _ and - (set prefix to rename the server's tools)", s.Prefix)
		}
		if other, dup := byPrefix[s.Prefix]; dup {
			p.errorf(n, at, "%q is also the prefix of server %q: exposed tool names would collide", s.Prefix, other)
		}
		byPrefix[s.Prefix] = s.Name
	}
	for _, s := range servers {
		if s.Disabled || s.Prefix == "" {
			continue
		}
		for other, name := range byPrefix {
			if other != "" && name != s.Name && strings.HasPrefix(s.Prefix, other+"__") {
				p.errorf(nodes[s.Path()], s.Path()+".prefix", "%q starts with %q, the prefix of server %q and its separator: its tools would pass for that server's; choose a prefix without \"__\"", s.Prefix, other+"__", name)
			}
		}
	}
}

var validPrefix = regexp.MustCompile(`^[A-Za-z0-9_-]{0,40}$`)

// Path is the key path of the server in its file: mcpServers.NAME, or
// projects.DIR.mcpServers.NAME for a project's.
func (s Server) Path() string {
	if s.Project != "" {
		return "projects." + s.Project + ".mcpServers." + s.Name
	}
	return "mcpServers." + s.Name
}

// projects parses the projects key: for each folder, the servers toolsift serves only there.
// global are the nodes of the top-level servers, by key path.
func (p *parser) projects(cfg *Config, n *yaml.Node, global map[string]*yaml.Node) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "projects", "want a mapping of folders to their servers ({/abs/folder: {mcpServers: …}}), got %s", kindName(n))
		return
	}
	cfg.Projects = map[string][]Server{}
	p.fields(n, "projects", func(dir string, v *yaml.Node, at string) {
		if !filepath.IsAbs(dir) {
			p.errorf(v, at, "a project is named by its folder's absolute path, such as /home/me/src/app")
			return
		}
		dir = filepath.Clean(dir)
		if v.Kind != yaml.MappingNode {
			p.errorf(v, at, "want a mapping with an mcpServers key, got %s", kindName(v))
			return
		}
		nodes := maps.Clone(global)
		var servers []Server
		p.fields(v, at, func(key string, v *yaml.Node, at string) {
			if key != "mcpServers" {
				p.unknownKey(v, at, key, projectKeys)
				return
			}
			if v.Kind != yaml.MappingNode {
				p.errorf(v, at, "want a mapping of server names, got %s", kindName(v))
				return
			}
			p.fields(v, at, func(name string, v *yaml.Node, at string) {
				if slices.ContainsFunc(cfg.Servers, func(s Server) bool { return s.Name == name }) {
					p.errorf(v, at, "%q is also a server of every folder (mcpServers.%s): rename one", name, name)
					return
				}
				s := p.server(name, v, at)
				s.Project = dir
				nodes[s.Path()] = v
				servers = append(servers, s)
			})
		})
		p.applyDefaults(cfg.Defaults, servers, at+".mcpServers.")
		p.validate(append(slices.Clone(cfg.Servers), servers...), nodes)
		cfg.Projects[dir] = servers
	})
}

// ForProject returns the configuration as served in the folder dir: every folder's servers,
// and those of the project dir is in (the longest folder of Projects that is dir or holds
// it), if any.
func (c *Config) ForProject(dir string) *Config {
	if dir == "" || len(c.Projects) == 0 {
		return c
	}
	dir = filepath.Clean(dir)
	best := ""
	for p := range c.Projects {
		if (dir == p || strings.HasPrefix(dir, p+string(filepath.Separator))) && len(p) > len(best) {
			best = p
		}
	}
	if len(c.Projects[best]) == 0 {
		return c
	}
	out := *c
	out.Servers = append(slices.Clone(c.Servers), c.Projects[best]...)
	out.Project = best
	return &out
}

// AllServers returns every server the configuration can start, in any folder: those of
// every folder, then each project's (see Projects), by folder. It is what an approval of
// the file approves, so it is derived here, beside ForProject, rather than by whoever
// shows it: a server the configuration can run is one it lists.
func (c *Config) AllServers() []Server {
	var out []Server
	for _, s := range c.Servers {
		// After ForProject, Servers holds one project's servers too: they come below.
		if s.Project == "" {
			out = append(out, s)
		}
	}
	dirs := slices.Sorted(maps.Keys(c.Projects))
	for _, d := range dirs {
		out = append(out, c.Projects[d]...)
	}
	return out
}
