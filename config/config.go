// Package config loads toolsift's YAML (or JSON) configuration: defaults, then parse, then
// validate. Its shape is the mcpServers block of .mcp.json, so users paste what they have.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Server types.
const (
	TypeStdio = "stdio"
	TypeHTTP  = "http"
	TypeSSE   = "sse"
)

// Config is a loaded and validated configuration.
type Config struct {
	// File is the path the configuration was read from, for messages.
	File string
	// Servers are the configured upstream servers in file order, disabled ones included.
	Servers []Server
	// HTTP configures `toolsift serve --listen`.
	HTTP HTTP
	// Defaults holds the top-level lazyStart, idleTimeout, startupTimeout and callTimeout,
	// already applied to Servers.
	Defaults Defaults
	// MaxCalls is how many tool calls one client session may have in flight at once; 0
	// means the default (proxy.Options.MaxCalls).
	MaxCalls int
	// MaxUnlocked bounds the tools one client session has unlocked at a time; 0 means the
	// default (proxy.Options.MaxUnlocked).
	MaxUnlocked int
	// ListAllUnder, set by toolSearch: auto:N, is the token budget under which every tool
	// is listed directly and no search is offered; 0 (toolSearch: on) means always search.
	ListAllUnder int
	// Groups maps a group name to patterns of exposed tool names (path.Match), for
	// tool_search's group:NAME.
	Groups map[string][]string
	// Search configures how tool_search ranks, beyond words.
	Search Search
}

// HTTP configures the streamable HTTP front end.
type HTTP struct {
	// Listen is the address to serve on; empty means stdio. A bare port (":8080") binds
	// 127.0.0.1.
	Listen string
	// Tokens are the bearer tokens clients must present; none means no authentication,
	// which is allowed only on a loopback address.
	Tokens []string
	// AllowedOrigins are browser origins allowed besides localhost ones, such as
	// "https://app.example.com".
	AllowedOrigins []string
	// SessionIdleTimeout ends sessions idle this long; zero means 30m.
	SessionIdleTimeout time.Duration
	// ReadTimeout bounds reading a request's headers and body, and how long an idle
	// keep-alive connection is kept; zero means 30s.
	ReadTimeout time.Duration
	// MaxConnections bounds open connections; past it the longest idle ones are closed to
	// make room. Zero means a default below the process's file limit.
	MaxConnections int
	// MaxSessions bounds open sessions in total, and MaxSessionsPerToken those opened with
	// one token; past them a new session gets 503. Zero means 2000 and 500.
	MaxSessions, MaxSessionsPerToken int
}

// Server is one upstream MCP server.
type Server struct {
	// Name is the server's key under mcpServers.
	Name string
	// Type is TypeStdio, TypeHTTP or TypeSSE. It defaults to stdio when command is set and to
	// http when url is set.
	Type    string
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	URL     string
	Headers map[string]string
	// Prefix starts every exposed tool name of this server (prefix__tool). It defaults to Name;
	// an explicit empty prefix exposes bare tool names.
	Prefix string
	// Description is a one-line summary shown to the model in tool_search's description. Empty
	// means the server's own instructions or title.
	Description string
	// AlwaysLoad lists tool-name patterns (path.Match globs) shown to every session from the
	// start; AlwaysLoadAll shows every tool of the server.
	AlwaysLoad    []string
	AlwaysLoadAll bool
	// Allow, if not empty, keeps only the tools that match one of its patterns; Deny then drops
	// the tools that match one of its patterns. Denied tools are never listed, searched or called.
	Allow    []string
	Deny     []string
	Disabled bool
	// Tools holds per-tool overrides, by the tool's upstream name.
	Tools map[string]ToolOverride
	// CallTimeout bounds one call to the server, including any wait for the server to come
	// back; zero means the default, 120s.
	CallTimeout time.Duration
	// Concurrency bounds the calls in flight to the server, from all sessions; past it a
	// call waits its turn, within callTimeout. Zero means the default, 64.
	Concurrency int
	// MaxResultBytes bounds one message from a stdio server; an answer over it becomes an
	// error naming the limit. Zero means the default, 32 MiB.
	MaxResultBytes int
	// StartupTimeout bounds one start of the server: connecting, initialize and the first
	// tools/list; zero means the default, 60s (npx may download the server first).
	StartupTimeout time.Duration
	// LazyStart leaves the server stopped until one of its tools is called, when its catalog
	// is cached; without a cached catalog it is started to learn its tools.
	LazyStart bool
	// IdleTimeout stops a stdio server that has had no request for this long; the next call
	// starts it again. Zero means never.
	IdleTimeout time.Duration
	// OAuth configures how toolsift signs in to an HTTP or SSE server that asks for OAuth;
	// nil means discovery and dynamic registration, which most servers need nothing more for.
	OAuth *OAuth
}

// OAuth is a server's sign-in settings (toolsift auth login NAME).
type OAuth struct {
	// ClientID and ClientSecret are those of an OAuth app the user registered with the
	// server's authorization server, for servers without dynamic registration (GitHub,
	// Slack). A secret is sent to the token endpoint as the server's metadata allows.
	ClientID, ClientSecret string
	// Scopes are asked for at sign-in, besides what the server asks for.
	Scopes []string
	// RedirectURI is the loopback address the sign-in returns to, as registered with the
	// app; empty means http://127.0.0.1 on a free port.
	RedirectURI string
	// ClientMetadataURL names a Client ID Metadata Document the user hosts (https), used as
	// the client ID where the authorization server supports such documents.
	ClientMetadataURL string
}

// Defaults are the top-level settings that apply to every server that does not set its own.
type Defaults struct {
	CallTimeout, StartupTimeout, IdleTimeout time.Duration
	LazyStart                                bool
	MaxResultBytes, Concurrency              int
}

// ToolOverride fixes how one upstream tool is found and described, without forking the
// server: extra search keywords, and a description that replaces the server's.
type ToolOverride struct {
	Keywords    []string
	Description string
}

// Allowed reports whether the server's allow and deny lists admit the tool.
func (s *Server) Allowed(tool string) bool {
	if len(s.Allow) > 0 && !matchAny(s.Allow, tool) {
		return false
	}
	return !matchAny(s.Deny, tool)
}

// AlwaysLoaded reports whether the configuration marks the tool always-load.
func (s *Server) AlwaysLoaded(tool string) bool {
	return s.AlwaysLoadAll || matchAny(s.AlwaysLoad, tool)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Load reads and validates the configuration file at file. getenv resolves ${VAR}
// references; nil means os.LookupEnv.
func Load(file string, getenv func(string) (string, bool)) (*Config, error) {
	data, err := Read(file)
	if err != nil {
		return nil, err
	}
	return Parse(file, data, getenv)
}

// MaxBytes bounds a configuration file. A real one is a few kilobytes; the bound keeps a
// wrong path (a device, a log) from being read without end.
const MaxBytes = 4 << 20

// Read returns the content of the configuration file at file, refusing one over MaxBytes.
func Read(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading config %s: %w", file, err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("reading config: %s is over %d MiB, and a configuration is a few kilobytes: is it the right file?", file, MaxBytes>>20)
	}
	return data, nil
}

// Parse validates configuration text; file only names it in errors.
func Parse(file string, data []byte, getenv func(string) (string, bool)) (*Config, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(file, data, err)
	}
	p := &parser{file: file, getenv: getenv}
	cfg := &Config{File: file, Search: Search{Sampling: SamplingOff}}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Msg: "empty file: want a mapping with an mcpServers key"}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line, Msg: "want a mapping with an mcpServers key, got " + kindName(root)}
	}
	var servers *yaml.Node
	p.fields(root, "", func(key string, val *yaml.Node, at string) {
		switch key {
		case "mcpServers":
			servers = val
		case "listen":
			cfg.HTTP.Listen = p.str(val, at)
		case "auth":
			if val.Kind != yaml.MappingNode {
				p.errorf(val, at, "want a mapping with tokens, got %s", kindName(val))
				return
			}
			p.fields(val, at, func(key string, val *yaml.Node, at string) {
				if key != "tokens" {
					p.unknownKey(val, at, key, authKeys)
					return
				}
				cfg.HTTP.Tokens = p.strList(val, at)
				for i, tok := range cfg.HTTP.Tokens {
					if len(tok) < 16 {
						p.errorf(val, fmt.Sprintf("%s[%d]", at, i), "a token must be at least 16 characters")
					}
				}
			})
		case "allowedOrigins":
			cfg.HTTP.AllowedOrigins = p.strList(val, at)
		case "sessionIdleTimeout":
			cfg.HTTP.SessionIdleTimeout = p.duration(val, at)
		case "readTimeout":
			cfg.HTTP.ReadTimeout = p.duration(val, at)
		case "maxConnections":
			cfg.HTTP.MaxConnections = p.positive(val, at)
		case "maxSessions":
			cfg.HTTP.MaxSessions = p.positive(val, at)
		case "maxSessionsPerToken":
			cfg.HTTP.MaxSessionsPerToken = p.positive(val, at)
		case "lazyStart":
			cfg.Defaults.LazyStart = p.bool(val, at)
		case "idleTimeout":
			cfg.Defaults.IdleTimeout = p.duration(val, at)
		case "startupTimeout":
			cfg.Defaults.StartupTimeout = p.duration(val, at)
		case "callTimeout":
			cfg.Defaults.CallTimeout = p.duration(val, at)
		case "maxCalls":
			cfg.MaxCalls = p.positive(val, at)
		case "maxResultBytes":
			cfg.Defaults.MaxResultBytes = p.positive(val, at)
		case "concurrency":
			cfg.Defaults.Concurrency = p.positive(val, at)
		case "maxUnlocked":
			cfg.MaxUnlocked = p.positive(val, at)
		case "toolSearch":
			cfg.ListAllUnder = p.toolSearch(val, at)
		case "groups":
			cfg.Groups = p.groups(val, at)
		case "search":
			cfg.Search = p.search(val, at)
		default:
			p.unknownKey(val, at, key, topKeys)
		}
	})
	if servers == nil {
		p.errorf(root, "mcpServers", "missing: list your servers under mcpServers")
	} else if servers.Kind != yaml.MappingNode {
		p.errorf(servers, "mcpServers", "want a mapping of server names, got %s", kindName(servers))
	} else {
		nodes := map[string]*yaml.Node{}
		p.set = map[string]bool{}
		p.fields(servers, "mcpServers", func(name string, v *yaml.Node, at string) {
			if name == "" {
				p.errorf(v, "mcpServers", `a server's name is empty: name it, as in github: or "my-server":`)
			}
			nodes[name] = v
			cfg.Servers = append(cfg.Servers, p.server(name, v, at))
		})
		p.applyDefaults(cfg)
		p.validate(cfg, nodes)
	}
	if len(p.errs) > 0 {
		// Top-level keys are checked before the servers: report in the file's order.
		slices.SortStableFunc(p.errs, func(a, b error) int {
			return cmp.Compare(a.(*Error).Line, b.(*Error).Line)
		})
		return nil, errors.Join(p.errs...)
	}
	return cfg, nil
}

type parser struct {
	file   string
	getenv func(string) (string, bool)
	errs   []error
	// set holds the key paths of server settings written in the file, so that a top-level
	// default fills only the others.
	set map[string]bool
	// guessed holds the key paths that a mistyped key was taken to mean (mcpServers.a.command
	// for "comand"), so that their absence is not reported a second time.
	guessed map[string]bool
}

// applyDefaults gives each server the top-level settings it does not set itself.
func (p *parser) applyDefaults(cfg *Config) {
	d := cfg.Defaults
	for i := range cfg.Servers {
		s := &cfg.Servers[i]
		at := "mcpServers." + s.Name + "."
		if !p.set[at+"lazyStart"] {
			s.LazyStart = d.LazyStart
		}
		if !p.set[at+"callTimeout"] {
			s.CallTimeout = d.CallTimeout
		}
		if !p.set[at+"startupTimeout"] {
			s.StartupTimeout = d.StartupTimeout
		}
		if !p.set[at+"maxResultBytes"] {
			s.MaxResultBytes = d.MaxResultBytes
		}
		if !p.set[at+"concurrency"] {
			s.Concurrency = d.Concurrency
		}
		// Stopping an idle HTTP server would save nothing on this machine.
		if !p.set[at+"idleTimeout"] && s.Type == TypeStdio {
			s.IdleTimeout = d.IdleTimeout
		}
	}
}

// fields calls f for each key of a mapping node, reporting duplicate keys.
func (p *parser) fields(n *yaml.Node, at string, f func(key string, val *yaml.Node, at string)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		sub := k.Value
		if at != "" {
			sub = at + "." + k.Value
		}
		if seen[k.Value] {
			p.errorf(k, sub, "duplicate key")
			continue
		}
		seen[k.Value] = true
		f(k.Value, v, sub)
	}
}

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

func (p *parser) str(n *yaml.Node, at string) string {
	// Numbers and booleans are read as their text: YAML users write `PORT: 8080`.
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, at, "want a string, got %s", kindName(n))
		return ""
	}
	return p.expand(n, at, n.Value)
}

func (p *parser) toolOverrides(n *yaml.Node, at string) map[string]ToolOverride {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping of tool names to {keywords, description}, got %s", kindName(n))
		return nil
	}
	out := map[string]ToolOverride{}
	p.fields(n, at, func(tool string, v *yaml.Node, at string) {
		var o ToolOverride
		if v.Kind != yaml.MappingNode {
			p.errorf(v, at, "want a mapping with keywords and/or description, got %s", kindName(v))
			return
		}
		p.fields(v, at, func(key string, v *yaml.Node, at string) {
			switch key {
			case "keywords":
				o.Keywords = p.strList(v, at)
			case "description":
				o.Description = p.str(v, at)
			default:
				p.unknownKey(v, at, key, toolKeys)
			}
		})
		out[tool] = o
	})
	return out
}

func (p *parser) duration(n *yaml.Node, at string) time.Duration {
	s := p.str(n, at)
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		p.errorf(n, at, "%q is not a positive duration (write 30s, 10m, 1h)", s)
		return 0
	}
	return d
}

func (p *parser) positive(n *yaml.Node, at string) int {
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil || v < 1 {
		p.errorf(n, at, "%q is not a positive whole number", n.Value)
		return 0
	}
	return v
}

func (p *parser) bool(n *yaml.Node, at string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		p.errorf(n, at, "want true or false, got %s", kindName(n))
		return false
	}
	var b bool
	_ = n.Decode(&b)
	return b
}

func (p *parser) strList(n *yaml.Node, at string) []string {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, at, "want a list of strings, got %s", kindName(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		out = append(out, p.str(item, fmt.Sprintf("%s[%d]", at, i)))
	}
	return out
}

// patterns reads a list of tool-name globs, rejecting malformed ones.
func (p *parser) patterns(n *yaml.Node, at string) []string {
	list := p.strList(n, at)
	for i, pat := range list {
		if _, err := path.Match(pat, ""); err != nil {
			p.errorf(n.Content[i], fmt.Sprintf("%s[%d]", at, i), "%q is not a valid pattern: %v", pat, err)
		}
	}
	return list
}

func (p *parser) strMap(n *yaml.Node, at string) map[string]string {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping of names to strings, got %s", kindName(n))
		return nil
	}
	out := map[string]string{}
	p.fields(n, at, func(key string, v *yaml.Node, at string) {
		out[key] = p.str(v, at)
	})
	return out
}

// envRef matches ${VAR}, ${VAR:-default}, and $${, which stands for a literal ${.
var envRef = regexp.MustCompile(`\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expand replaces ${VAR} and ${VAR:-default} in s, and $${ with ${.
func (p *parser) expand(n *yaml.Node, at, s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return envRef.ReplaceAllStringFunc(s, func(ref string) string {
		if ref == "$${" {
			return "${"
		}
		m := envRef.FindStringSubmatch(ref)
		if v, ok := p.getenv(m[1]); ok && (v != "" || m[2] == "") {
			return v
		}
		if m[2] != "" {
			return m[3]
		}
		p.errorf(n, at, "${%s} is not set (export it, or write ${%s:-default})", m[1], m[1])
		return ""
	})
}

func kindName(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!null":
		return "null"
	case "!!bool":
		return "a boolean"
	case "!!int", "!!float":
		return "a number"
	}
	return "a string"
}

// Secrets returns the values the configuration holds that must never be shown: every
// server's env and header values, the user information and query values of its URL, the
// HTTP service's tokens and the embeddings API key. Short values are among them too; the
// redactor leaves out those too short to be secrets.
func (c *Config) Secrets() []string {
	var out []string
	fromURL := func(raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		if u.User != nil {
			out = append(out, u.User.Username())
			if pw, ok := u.User.Password(); ok {
				out = append(out, pw)
			}
		}
		for _, vs := range u.Query() {
			out = append(out, vs...)
		}
	}
	for _, s := range c.Servers {
		for _, v := range s.Env {
			out = append(out, v)
		}
		for _, v := range s.Headers {
			out = append(out, v)
			// "Bearer TOKEN": the token alone is what a server may echo.
			if _, cred, ok := strings.Cut(v, " "); ok {
				out = append(out, cred)
			}
		}
		fromURL(s.URL)
		if s.OAuth != nil {
			out = append(out, s.OAuth.ClientSecret)
		}
	}
	out = append(out, c.HTTP.Tokens...)
	if e := c.Search.Embeddings; e.URL != "" {
		out = append(out, e.APIKey)
		fromURL(e.URL)
	}
	return out
}

// oauth reads a server's oauth block.
func (p *parser) oauth(n *yaml.Node, at string) *OAuth {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping with clientId, clientSecret, scopes, redirectUri or clientMetadataUrl, got %s", kindName(n))
		return nil
	}
	o := &OAuth{}
	var secretNode *yaml.Node
	p.fields(n, at, func(key string, v *yaml.Node, at string) {
		switch key {
		case "clientId":
			o.ClientID = p.str(v, at)
		case "clientSecret":
			secretNode = v
			o.ClientSecret = p.str(v, at)
		case "scopes":
			o.Scopes = p.strList(v, at)
		case "redirectUri":
			o.RedirectURI = p.str(v, at)
			if u, err := url.Parse(o.RedirectURI); err != nil || u.Scheme != "http" || u.Port() == "" ||
				(u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost" && u.Hostname() != "::1") {
				p.errorf(v, at, "%q is not a loopback address with a port (write http://127.0.0.1:PORT/callback, as registered with the app)", o.RedirectURI)
			}
		case "clientMetadataUrl":
			o.ClientMetadataURL = p.str(v, at)
			if u, err := url.Parse(o.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
				p.errorf(v, at, "%q is not an https URL with a path (a Client ID Metadata Document is served over https)", o.ClientMetadataURL)
			}
		default:
			p.unknownKey(v, at, key, oauthKeys)
		}
	})
	if o.ClientSecret != "" && o.ClientID == "" && secretNode != nil {
		p.errorf(secretNode, at+".clientSecret", "a secret needs its clientId")
	}
	return o
}
