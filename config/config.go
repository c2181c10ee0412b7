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
	"slices"
	"strings"
	"syscall"
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
	// After ForProject, they include the project's.
	Servers []Server
	// Projects holds the servers toolsift serves only in one folder (a project), by the
	// folder's absolute path: projects: {DIR: {mcpServers: …}}. ForProject picks them.
	Projects map[string][]Server
	// Project is the folder whose servers ForProject added, if any.
	Project string
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
	// Audit configures the audit log of tool calls.
	Audit Audit
	// Metrics configures /metrics, Tracing OpenTelemetry traces.
	Metrics Metrics
	Tracing Tracing
	// State configures what the replicas of a service share.
	State State
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
	// PublicURL is the service's address as its clients reach it (through a reverse proxy,
	// say): https://mcp.example.com. The identity provider's tokens name it, and OAuth
	// sign-ins come back to it.
	PublicURL string
	// OIDC, if set, has people sign in at the team's identity provider (auth.oidc).
	OIDC *OIDC
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
	// AlwaysLoadOff (alwaysLoad: false) overrides the tools that ask to be always loaded
	// themselves (_meta["anthropic/alwaysLoad"]): none of the server's is.
	AlwaysLoadOff bool
	// Allow, if not empty, keeps only the tools that match one of its patterns; Deny then drops
	// the tools that match one of its patterns. Denied tools are never listed, searched or called.
	Allow    []string
	Deny     []string
	Disabled bool
	// Project is the folder whose servers this one is one of (see Config.Projects); empty
	// for a server of every folder.
	Project string
	// Broken says why a server cannot run as written, such as a variable it needs that is
	// not set; such a server is also Disabled, so that the others still run.
	Broken string
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
	// Access, if set, limits the server's tools to some callers of a shared service.
	Access *Access
	// Pin is how the server's tools are pinned: PinChanges (the default), PinAll or PinOff.
	Pin string
}

// Pin modes (Server.Pin): each tool's definition is pinned on first sight and a change
// holds it for review; a new tool waits for review too; nothing is pinned.
const (
	PinChanges = "changes"
	PinAll     = "all"
	PinOff     = "off"
)

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
	// AlwaysLoad, if set, says whether the tool is always loaded, over the server's
	// alwaysLoad and the tool's own ask.
	AlwaysLoad *bool
	// Access, if set, says who may use the tool, over the server's.
	Access *Access
}

// Allowed reports whether the server's allow and deny lists admit the tool.
func (s *Server) Allowed(tool string) bool {
	if len(s.Allow) > 0 && !matchAny(s.Allow, tool) {
		return false
	}
	return !matchAny(s.Deny, tool)
}

// AlwaysLoaded reports whether the tool is always loaded: by the configuration (the tool's
// own alwaysLoad, then the server's), else as the tool asks itself (asked).
func (s *Server) AlwaysLoaded(tool string, asked bool) bool {
	if o, ok := s.Tools[tool]; ok && o.AlwaysLoad != nil {
		return *o.AlwaysLoad
	}
	return s.AlwaysLoadAll || matchAny(s.AlwaysLoad, tool) || asked && !s.AlwaysLoadOff
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
	return readAll(f, file)
}

// ReadRegular is Read for a file nobody named, such as a folder's toolsift.yaml that came
// with a cloned repository: it refuses anything but a regular file (a device, a FIFO, a
// socket, or a symlink to one), and opening it does not wait for a FIFO's writer, so such
// a file cannot stall or feed toolsift. The check is on the file opened, so swapping the
// path in between cannot slip past it.
func ReadRegular(file string) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading config %s: %w", file, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("reading config: %s is not a regular file (%s)", file, st.Mode().Type())
	}
	return readAll(f, file)
}

// readAll reads f, the configuration file named file, refusing one over MaxBytes.
func readAll(f *os.File, file string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading config %s: %w", file, err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("reading config: %s is over %d MiB, and a configuration is a few kilobytes: is it the right file?", file, MaxBytes>>20)
	}
	return data, nil
}

// Parse validates configuration text; file only names it in errors. Whoever must use
// exactly the bytes it checked (an approval's digest) reads once and parses those.
func Parse(file string, data []byte, getenv func(string) (string, bool)) (*Config, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(file, data, err)
	}
	p := &parser{file: file, getenv: getenv}
	cfg := &Config{File: file, Search: Search{Sampling: SamplingOff, SavingsLine: true}}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Msg: "empty file: want a mapping with an mcpServers key"}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line, Msg: "want a mapping with an mcpServers key, got " + kindName(root)}
	}
	servers, projects := p.top(cfg, root)
	p.servers(cfg, root, servers, projects)
	if len(p.errs) > 0 {
		// Top-level keys are checked before the servers: report in the file's order.
		slices.SortStableFunc(p.errs, func(a, b error) int {
			return cmp.Compare(a.(*Error).Line, b.(*Error).Line)
		})
		return nil, errors.Join(p.errs...)
	}
	return cfg, nil
}

// top reads the top-level keys into cfg, and returns the nodes of the servers and of the
// projects' servers, read next.
func (p *parser) top(cfg *Config, root *yaml.Node) (servers, projects *yaml.Node) {
	var oidcNode *yaml.Node
	defer func() {
		if oidcNode != nil && cfg.HTTP.PublicURL == "" {
			p.errorf(oidcNode, "auth.oidc", "needs publicUrl: the service's address as clients reach it (https://mcp.example.com), which the provider's tokens name")
		}
	}()
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
				switch key {
				case "tokens":
					cfg.HTTP.Tokens = p.strList(val, at)
					for i, tok := range cfg.HTTP.Tokens {
						if len(tok) < 16 {
							p.errorf(val, fmt.Sprintf("%s[%d]", at, i), "a token must be at least 16 characters")
						}
					}
				case "oidc":
					cfg.HTTP.OIDC = p.oidc(val, at)
					oidcNode = val
				default:
					p.unknownKey(val, at, key, authKeys)
				}
			})
		case "publicUrl":
			cfg.HTTP.PublicURL = strings.TrimSuffix(p.str(val, at), "/")
			if !secureURL(cfg.HTTP.PublicURL) {
				p.errorf(val, at, "%q is not an https URL (http only on this machine, for testing)", cfg.HTTP.PublicURL)
			}
		case "audit":
			cfg.Audit = p.audit(val, at)
		case "metrics":
			cfg.Metrics = p.metrics(val, at)
		case "tracing":
			cfg.Tracing = p.tracing(val, at)
		case "state":
			cfg.State = p.state(val, at)
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
		case "projects":
			projects = val
		default:
			p.unknownKey(val, at, key, topKeys)
		}
	})
	return servers, projects
}

// servers reads the servers of every folder, then the projects' (see projects), and checks
// them.
func (p *parser) servers(cfg *Config, root, servers, projects *yaml.Node) {
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
			nodes["mcpServers."+name] = v
			cfg.Servers = append(cfg.Servers, p.server(name, v, at))
		})
		p.applyDefaults(cfg.Defaults, cfg.Servers, "mcpServers.")
		p.validate(cfg.Servers, nodes)
		if projects != nil {
			p.projects(cfg, projects, nodes)
		}
	}
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
	// current is the key path of the server being parsed, if any, and unset what each
	// server (by key path) needs that is not set: those disable only their own server.
	current string
	unset   map[string][]string
}

// applyDefaults gives each server the top-level settings it does not set itself; prefix is
// the key path of the servers' mapping, with its dot.
func (p *parser) applyDefaults(d Defaults, servers []Server, prefix string) {
	for i := range servers {
		s := &servers[i]
		at := prefix + s.Name + "."
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
	if o := c.HTTP.OIDC; o != nil && o.ClientSecret != "" {
		out = append(out, o.ClientSecret)
	}
	fromURL(c.State.RedisURL)
	if e := c.Search.Embeddings; e.URL != "" {
		out = append(out, e.APIKey)
		fromURL(e.URL)
	}
	return out
}
