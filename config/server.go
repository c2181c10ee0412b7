package config

import (
	"net/url"
	"regexp"

	"gopkg.in/yaml.v3"
)

func (p *parser) server(name string, n *yaml.Node, at string) Server {
	s := Server{Name: name, Prefix: name}
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
		default:
			p.unknownKey(v, at, key, serverKeys)
		}
	})
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

// validate checks what spans servers; nodes locates each server by name.
func (p *parser) validate(cfg *Config, nodes map[string]*yaml.Node) {
	byPrefix := map[string]string{}
	for _, s := range cfg.Servers {
		if s.Disabled {
			continue
		}
		n := nodes[s.Name]
		at := "mcpServers." + s.Name + ".prefix"
		if !validPrefix.MatchString(s.Prefix) {
			p.errorf(n, at, "%q may use only letters, digits, _ and - (set prefix to rename the server's tools)", s.Prefix)
		}
		if other, dup := byPrefix[s.Prefix]; dup {
			p.errorf(n, at, "%q is also the prefix of server %q: exposed tool names would collide", s.Prefix, other)
		}
		byPrefix[s.Prefix] = s.Name
	}
}

var validPrefix = regexp.MustCompile(`^[A-Za-z0-9_-]{0,40}$`)
