package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParseValid(t *testing.T) {
	src := `
mcpServers:
  github:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-github", 7]
    env: { GITHUB_PERSONAL_ACCESS_TOKEN: "${GITHUB_TOKEN}", LEVEL: "${LEVEL:-info}", PORT: 8080 }
    alwaysLoad: [search_issues, create_issue]
  jira:
    type: http
    url: https://jira.example.com/mcp
    headers: { Authorization: "Bearer ${JIRA_TOKEN}" }
    deny: ["delete_*"]
    prefix: j
    callTimeout: 30s
    tools:
      create_issue: { keywords: [bug, ticket], description: "File a Jira ticket" }
  all:
    url: http://127.0.0.1:9/sse
    type: sse
    alwaysLoad: true
    prefix: ""
  off:
    command: nothing
    prefix: j
    disabled: true
`
	cfg, err := Parse("c.yaml", []byte(src), env(map[string]string{"GITHUB_TOKEN": "ghp", "JIRA_TOKEN": "jt"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 4 {
		t.Fatalf("got %d servers, want 4", len(cfg.Servers))
	}
	gh, jira, all := cfg.Servers[0], cfg.Servers[1], cfg.Servers[2]
	if gh.Type != TypeStdio || gh.Prefix != "github" || gh.Args[2] != "7" {
		t.Errorf("github = %+v", gh)
	}
	if gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp" || gh.Env["LEVEL"] != "info" || gh.Env["PORT"] != "8080" {
		t.Errorf("github env = %v", gh.Env)
	}
	if !gh.AlwaysLoaded("create_issue", false) || gh.AlwaysLoaded("list_issues", false) {
		t.Errorf("github alwaysLoad = %v", gh.AlwaysLoad)
	}
	if jira.Headers["Authorization"] != "Bearer jt" || jira.Prefix != "j" || jira.CallTimeout.Seconds() != 30 {
		t.Errorf("jira = %+v", jira)
	}
	if o := jira.Tools["create_issue"]; o.Description != "File a Jira ticket" || len(o.Keywords) != 2 {
		t.Errorf("jira tool overrides = %+v", jira.Tools)
	}
	if jira.Allowed("delete_issue") || !jira.Allowed("get_issue") {
		t.Errorf("jira deny %v not applied", jira.Deny)
	}
	if all.Type != TypeSSE || all.Prefix != "" || !all.AlwaysLoaded("anything", false) {
		t.Errorf("all = %+v", all)
	}
}

func TestParseJSON(t *testing.T) {
	src := `{"mcpServers": {"fs": {"type": "stdio", "command": "npx", "args": ["-y", "x"]}}}`
	cfg, err := Parse("c.json", []byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Servers[0].Command != "npx" {
		t.Errorf("got %+v", cfg.Servers[0])
	}
}

func TestAllowList(t *testing.T) {
	s := Server{Allow: []string{"get_*", "list_*"}, Deny: []string{"get_secret"}}
	for tool, want := range map[string]bool{"get_issue": true, "list_x": true, "get_secret": false, "create_x": false} {
		if got := s.Allowed(tool); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", tool, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // substrings of the error
	}{
		{"empty", ``, []string{"c.yaml", "empty file"}},
		{"not a mapping", `- a`, []string{"c.yaml:1", "want a mapping"}},
		{"syntax", "mcpServers:\n  a: [\n", []string{"c.yaml:2: YAML syntax"}},
		{"key indented too little", "mcpServers:\n  github:\n    command: npx\n   args: [x]\n", []string{"c.yaml:4: YAML syntax: did not find expected key; check this line's indentation", `"   args: [x]"`}},
		{"key indented too much", "mcpServers:\n  github:\n    command: npx\n     args: [x]\n  b:\n    command: y\n", []string{"c.yaml:4: YAML syntax: mapping values are not allowed"}},
		{"unclosed list", "mcpServers:\n  a:\n    command: x\n    args: [\"-y\", \"x\"\n  b:\n    command: y\n", []string{"c.yaml:4: YAML syntax: did not find expected ',' or ']'"}},
		{"tab indent", "mcpServers:\n  a:\n\tcommand: x\n", []string{"c.yaml:3: YAML syntax", "not tabs"}},
		{"unclosed quote", "mcpServers:\n  a:\n    command: \"x\n    args: [a]\n", []string{"c.yaml:3: YAML syntax", `the " opened on this line is not closed`}},
		{"unclosed single quote", "mcpServers:\n  a:\n    command: 'it''s\n    args: [a]\n", []string{"c.yaml:3: YAML syntax", `the ' opened on this line is not closed`}},
		{"no servers key", `servers: {}`, []string{"c.yaml:1: servers: unknown key; did you mean mcpServers?", "toolsift import FILE"}},
		{"client config pasted whole", `{"globalShortcut": "Ctrl+Space", "mcpServers": {"a": {"command": "x"}}}`, []string{"c.yaml:1: globalShortcut: unknown key (known:", "run: toolsift import FILE"}},
		{"typo suggests nearest", "mcpServers:\n  gh:\n    comand: x\n", []string{"c.yaml:3: mcpServers.gh.comand: unknown key; did you mean command?"}},
		{"errors in the file's order", "mcpServers:\n  a:\n    command: x\n    bogus: 1\nlisten: [a]\n", []string{"c.yaml:4: mcpServers.a.bogus: unknown key (known: ", ")\nc.yaml:5: listen"}},
		{"case suggests nearest", "mcpServers:\n  gh:\n    command: x\n    AlwaysLoad: true\n", []string{"mcpServers.gh.AlwaysLoad: unknown key; did you mean alwaysLoad?"}},
		{"far key suggests nothing", "mcpServers:\n  gh:\n    command: x\n    zzzzzz: 1\n", []string{"mcpServers.gh.zzzzzz: unknown key (known:"}},
		{"servers not a map", `mcpServers: [a]`, []string{"c.yaml:1: mcpServers: want a mapping"}},
		{"unknown server key", "mcpServers:\n  gh:\n    command: x\n    comand: y\n", []string{"c.yaml:4: mcpServers.gh.comand: unknown key"}},
		{"args not a list", "mcpServers:\n  gh:\n    command: x\n    args: -y\n", []string{"c.yaml:4: mcpServers.gh.args: want a list of strings, got a string"}},
		{"args item a map", "mcpServers:\n  gh:\n    command: x\n    args: [{a: b}]\n", []string{"mcpServers.gh.args[0]: want a string, got a mapping"}},
		{"env not a map", "mcpServers:\n  gh:\n    command: x\n    env: [A]\n", []string{"mcpServers.gh.env: want a mapping"}},
		{"neither command nor url", "mcpServers:\n  gh:\n    args: [a]\n", []string{"c.yaml:3: mcpServers.gh: neither command"}},
		{"http without url", "mcpServers:\n  gh:\n    type: http\n", []string{"mcpServers.gh.url: missing"}},
		{"bad url", "mcpServers:\n  gh:\n    url: ftp://x\n", []string{"mcpServers.gh.url: \"ftp://x\" is not an http(s) URL"}},
		{"bad type", "mcpServers:\n  gh:\n    type: websocket\n    url: http://x\n", []string{"c.yaml:3: mcpServers.gh.type: \"websocket\" is not a server type"}},
		{"both", "mcpServers:\n  gh:\n    command: x\n    url: http://x\n", []string{"mcpServers.gh.url: a stdio server takes command"}},
		{"alwaysLoad number", "mcpServers:\n  gh:\n    command: x\n    alwaysLoad: 3\n", []string{"mcpServers.gh.alwaysLoad: want a list of strings, got a number"}},
		{"disabled string", "mcpServers:\n  gh:\n    command: x\n    disabled: nope\n", []string{"mcpServers.gh.disabled: want true or false"}},
		{"bad glob", "mcpServers:\n  gh:\n    command: x\n    deny: [\"[\"]\n", []string{"mcpServers.gh.deny[0]: \"[\" is not a valid pattern"}},
		{"duplicate prefix", "mcpServers:\n  a:\n    command: x\n    prefix: p\n  b:\n    command: y\n    prefix: p\n", []string{"c.yaml:6: mcpServers.b.prefix: \"p\" is also the prefix of server \"a\""}},
		{"a prefix posing as another's", "mcpServers:\n  evil:\n    command: x\n    prefix: github__x\n  github:\n    command: y\n", []string{`c.yaml:3: mcpServers.evil.prefix: "github__x" starts with "github__", the prefix of server "github"`}},
		{"bad prefix", "mcpServers:\n  \"my server\":\n    command: x\n", []string{"mcpServers.my server.prefix: \"my server\" may use only"}},
		{"duplicate server", "mcpServers:\n  a:\n    command: x\n  a:\n    command: y\n", []string{"mcpServers.a: duplicate key"}},
		{"null command", "mcpServers:\n  a:\n    command:\n", []string{"mcpServers.a.command: want a string, got null"}},
		{"tools not a map", "mcpServers:\n  a:\n    command: x\n    tools: [a]\n", []string{"mcpServers.a.tools: want a mapping of tool names"}},
		{"tool override unknown key", "mcpServers:\n  a:\n    command: x\n    tools:\n      t: {keyword: [x]}\n", []string{"c.yaml:5: mcpServers.a.tools.t.keyword: unknown key"}},
		{"tool override keywords string", "mcpServers:\n  a:\n    command: x\n    tools:\n      t: {keywords: x}\n", []string{"mcpServers.a.tools.t.keywords: want a list of strings"}},
		{"listen a list", "listen: [a]\nmcpServers: {}\n", []string{"c.yaml:1: listen: want a string"}},
		{"auth not a map", "auth: x\nmcpServers: {}\n", []string{"c.yaml:1: auth: want a mapping"}},
		{"auth unknown key", "auth: {token: [x]}\nmcpServers: {}\n", []string{"auth.token: unknown key"}},
		{"short token", "auth: {tokens: [short]}\nmcpServers: {}\n", []string{"auth.tokens[0]: a token must be at least 16"}},
		{"bad duration", "sessionIdleTimeout: soon\nmcpServers: {}\n", []string{"sessionIdleTimeout: \"soon\" is not a positive duration"}},
		{"negative duration", "sessionIdleTimeout: -1m\nmcpServers: {}\n", []string{"is not a positive duration"}},
		{"idleTimeout on http", "mcpServers:\n  a:\n    url: http://x/mcp\n    idleTimeout: 5m\n", []string{"c.yaml:4: mcpServers.a.idleTimeout: only a stdio server"}},
		{"lazyStart a string", "mcpServers:\n  a:\n    command: x\n    lazyStart: yes please\n", []string{"mcpServers.a.lazyStart: want true or false"}},
		{"top lazyStart a list", "lazyStart: [a]\nmcpServers: {}\n", []string{"c.yaml:1: lazyStart: want true or false, got a list"}},
		{"startupTimeout zero", "mcpServers:\n  a:\n    command: x\n    startupTimeout: 0s\n", []string{"mcpServers.a.startupTimeout: \"0s\" is not a positive duration"}},
		{"top idleTimeout number", "idleTimeout: 30\nmcpServers: {}\n", []string{"idleTimeout: \"30\" is not a positive duration"}},
		{"oauth on stdio", "mcpServers:\n  a:\n    command: x\n    oauth: {clientId: c}\n", []string{"c.yaml:4: mcpServers.a.oauth: only an http or sse server signs in with OAuth"}},
		{"oauth redirect not loopback", "mcpServers:\n  a:\n    url: https://x/mcp\n    oauth: {redirectUri: \"https://example.com/cb\"}\n", []string{"mcpServers.a.oauth.redirectUri: \"https://example.com/cb\" is not a loopback address with a port"}},
		{"oauth redirect without port", "mcpServers:\n  a:\n    url: https://x/mcp\n    oauth: {redirectUri: \"http://127.0.0.1/cb\"}\n", []string{"is not a loopback address with a port"}},
		{"oauth metadata over http", "mcpServers:\n  a:\n    url: https://x/mcp\n    oauth: {clientMetadataUrl: \"http://x/c.json\"}\n", []string{"mcpServers.a.oauth.clientMetadataUrl: \"http://x/c.json\" is not an https URL"}},
		{"oauth secret without id", "mcpServers:\n  a:\n    url: https://x/mcp\n    oauth:\n      clientSecret: s\n", []string{"mcpServers.a.oauth.clientSecret: a secret needs its clientId"}},
		{"oauth unknown key", "mcpServers:\n  a:\n    url: https://x/mcp\n    oauth: {client_id: c}\n", []string{"mcpServers.a.oauth.client_id: unknown key"}},
		{"empty server name", "mcpServers:\n  \"\":\n    command: x\n", []string{"c.yaml:3: mcpServers: a server's name is empty"}},
		{"two errors at once", "mcpServers:\n  a:\n    command: x\n    bogus: 1\n  b:\n    url: nope\n", []string{"mcpServers.a.bogus", "mcpServers.b.url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tt.src), env(nil))
			if err == nil {
				t.Fatalf("Parse(%q) = nil error, want %q", tt.src, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse(%q) error = %q, want it to contain %q", tt.src, err, w)
				}
			}
		})
	}
}

func TestParseHTTP(t *testing.T) {
	src := "listen: \":8080\"\nauth:\n  tokens: [\"${TOK}\"]\nallowedOrigins: [https://app.example.com]\nsessionIdleTimeout: 5m\nmcpServers: {}\n"
	cfg, err := Parse("c.yaml", []byte(src), env(map[string]string{"TOK": "0123456789abcdef0"}))
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.HTTP
	if h.Listen != ":8080" || len(h.Tokens) != 1 || h.Tokens[0] != "0123456789abcdef0" || h.AllowedOrigins[0] != "https://app.example.com" || h.SessionIdleTimeout.Minutes() != 5 {
		t.Errorf("HTTP = %+v", h)
	}
}

// TestParseDefaults checks that top-level settings fill what a server leaves unset, and
// only that.
func TestParseDefaults(t *testing.T) {
	src := `lazyStart: true
idleTimeout: 10m
startupTimeout: 20s
callTimeout: 30s
mcpServers:
  plain: {command: x}
  own: {command: x, lazyStart: false, idleTimeout: 1m, startupTimeout: 2s, callTimeout: 3s}
  remote: {url: "http://h/mcp"}
`
	cfg, err := Parse("c.yaml", []byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		lazy                bool
		idle, startup, call time.Duration
	}
	want := map[string]got{
		"plain":  {true, 10 * time.Minute, 20 * time.Second, 30 * time.Second},
		"own":    {false, time.Minute, 2 * time.Second, 3 * time.Second},
		"remote": {true, 0, 20 * time.Second, 30 * time.Second}, // idleTimeout is for stdio only
	}
	for _, s := range cfg.Servers {
		g := got{s.LazyStart, s.IdleTimeout, s.StartupTimeout, s.CallTimeout}
		if g != want[s.Name] {
			t.Errorf("server %s = %+v, want %+v", s.Name, g, want[s.Name])
		}
	}
}

// FuzzParse feeds arbitrary text to the parser, which must never panic and must either
// return a configuration or an error, not both.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"mcpServers:\n  a:\n    command: x\n",
		"{\"mcpServers\": {\"a\": {\"url\": \"http://x\"}}}",
		"mcpServers:\n  a: &x\n    command: y\n  b: *x\n",
		"listen: :1\nauth: {tokens: [\"${T:-0123456789abcdef}\"]}\nmcpServers: {}\n",
		"mcpServers:\n  a:\n    command: ${X}${\n    tools: {t: {keywords: [k]}}\n",
		"- - -", "", "\x00\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		cfg, err := Parse("f.yaml", []byte(src), env(nil))
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Parse(%q) = %v, %v", src, cfg, err)
		}
	})
}

func TestNearest(t *testing.T) {
	known := []string{"command", "args", "env", "url", "alwaysLoad", "mcpServers", "description"}
	tests := []struct{ key, want string }{
		{"comand", "command"},
		{"commmand", "command"},
		{"arg", "args"},
		{"ALWAYSLOAD", "alwaysLoad"},
		{"servers", "mcpServers"},
		{"envs", "env"},
		{"u", ""},       // one letter is not a typo of anything
		{"", ""},        // empty key
		{"zzz", ""},     // far from everything
		{"url ", "url"}, // a trailing space is one edit
		{"descriptoin", "description"},
		{"ulr", "url"}, // a swap is one edit
		{"nev", "env"}, // so is this one
		{"lru", ""},    // two swaps away
		{"命令", ""},
	}
	for _, tt := range tests {
		if got := nearest(tt.key, known); got != tt.want {
			t.Errorf("nearest(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// TestExampleShowsEveryKey: config.example.yaml is where users learn the keys, so it loads
// and it shows every key the parser knows, commented out or not.
func TestExampleShowsEveryKey(t *testing.T) {
	data, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("config.example.yaml", data, env(nil)); err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	for _, keys := range [][]string{topKeys, authKeys, serverKeys, toolKeys, searchKeys, embeddingsKeys, oauthKeys, oidcKeys, accessKeys, auditKeys, metricsKeys, tracingKeys, stateKeys, redisKeys} {
		for _, k := range keys {
			if !regexp.MustCompile(`(?m)^[ #]*` + k + `:`).Match(data) {
				t.Errorf("config.example.yaml does not show %s", k)
			}
		}
	}
}

// TestParseErrorsSayNoMore: an error is not followed by the errors it causes, nor by advice
// that does not fit it.
// TestUnsetVariable disables only the servers that use a variable that is not set, each
// with the error that names the variable and where the file uses it.
func TestUnsetVariable(t *testing.T) {
	tests := []struct {
		name, src string
		broken    map[string]string // server → substring of its Broken; absent: runs
	}{
		{"in env", "mcpServers:\n  gh:\n    command: x\n    env:\n      TOKEN: ${NOPE}\n  fs:\n    command: y\n",
			map[string]string{"gh": "c.yaml:5: ${NOPE} is not set (used in mcpServers.gh.env.TOKEN; export it where toolsift is started, or write ${NOPE:-default})"}},
		{"in a header", "mcpServers:\n  j:\n    url: https://x/mcp\n    headers: {Authorization: \"Bearer ${JIRA_TOKEN}\"}\n  fs:\n    command: y\n",
			map[string]string{"j": "${JIRA_TOKEN} is not set (used in mcpServers.j.headers.Authorization;"}},
		{"two in one server", "mcpServers:\n  a:\n    command: ${NOPE_CMD}\n    args: [\"${NOPE_ARG}\"]\n",
			map[string]string{"a": "${NOPE_CMD} is not set (used in mcpServers.a.command; export it where toolsift is started, or write ${NOPE_CMD:-default}); c.yaml:4: ${NOPE_ARG} is not set (used in mcpServers.a.args[0];"}},
		{"with a default", "mcpServers:\n  a:\n    command: x\n    env: {T: \"${NOPE:-none}\"}\n", nil},
		{"set but empty", "mcpServers:\n  a:\n    command: x\n    env: {T: \"${EMPTY}\"}\n", nil},
		{"escaped", "mcpServers:\n  a:\n    command: x\n    env: {T: \"$${NOPE}\"}\n", nil},
	}
	getenv := func(name string) (string, bool) {
		if name == "EMPTY" {
			return "", true
		}
		return "", false
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(tt.src), getenv)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range cfg.Servers {
				want, broken := tt.broken[s.Name]
				if s.Disabled != broken || !strings.Contains(s.Broken, want) || (!broken && s.Broken != "") {
					t.Errorf("%s: Disabled %v, Broken %q; want broken %v with %q", s.Name, s.Disabled, s.Broken, broken, want)
				}
			}
		})
	}
	// Two projects may each have a server of one name: one's unset variable is not the other's.
	cfg, err := Parse("c.yaml", []byte("mcpServers: {}\nprojects:\n  /p:\n    mcpServers:\n      pg: {command: x, env: {U: \"${NOPE}\"}}\n  /q:\n    mcpServers:\n      pg: {command: y}\n"), getenv)
	if err != nil {
		t.Fatal(err)
	}
	if p, q := cfg.Projects["/p"][0], cfg.Projects["/q"][0]; !p.Disabled || q.Disabled || q.Broken != "" {
		t.Errorf("/p's pg: disabled %v; /q's pg: disabled %v, broken %q", p.Disabled, q.Disabled, q.Broken)
	}
	// Outside a server, a variable not set is still an error of the file.
	_, err = Parse("c.yaml", []byte("mcpServers: {}\nauth:\n  tokens: [\"${NOPE}\"]\n"), getenv)
	if err == nil || !strings.Contains(err.Error(), "c.yaml:3: auth.tokens[0]: ${NOPE} is not set") {
		t.Errorf("auth token: %v", err)
	}
}

func TestParseErrorsSayNoMore(t *testing.T) {
	tests := []struct{ name, src, want, absent string }{
		{"typo of command", "mcpServers:\n  gh:\n    comand: x\n", "did you mean command?", "neither command"},
		{"typo of url", "mcpServers:\n  gh:\n    ulr: http://x/mcp\n", "did you mean url?", "neither command"},
		{"a key that is no typo", "mcpServers:\n  gh:\n    zzzzzz: x\n", "unknown key", "did you mean"},
		{"top-level typo is no client file", "lazystart: true\nmcpServers: {}\n", "did you mean lazyStart?", "toolsift import"},
	}
	for _, tt := range tests {
		_, err := Parse("c.yaml", []byte(tt.src), env(nil))
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), tt.absent) {
			t.Errorf("%s: Parse(%q) error = %v, want %q and no %q", tt.name, tt.src, err, tt.want, tt.absent)
		}
	}
	// With the typo's server missing both, the real mistake is still reported.
	if _, err := Parse("c.yaml", []byte("mcpServers:\n  gh:\n    zzzzzz: x\n"), env(nil)); err == nil || !strings.Contains(err.Error(), "neither command") {
		t.Errorf("a server with neither command nor url and no typo: %v", err)
	}
}

func TestMaxCalls(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte("maxCalls: 7\nmcpServers: {}\n"), env(nil))
	if err != nil || cfg.MaxCalls != 7 {
		t.Fatalf("maxCalls: 7 = %+v, %v", cfg, err)
	}
	for _, bad := range []string{"0", "-1", "2.5", "lots", "[1]"} {
		if _, err := Parse("c.yaml", []byte("maxCalls: "+bad+"\nmcpServers: {}\n"), env(nil)); err == nil || !strings.Contains(err.Error(), "c.yaml:1: maxCalls: ") {
			t.Errorf("maxCalls: %s = %v, want an error naming the key", bad, err)
		}
	}
}

func TestSessionViewSettings(t *testing.T) {
	for _, tc := range []struct {
		yaml      string
		unlocked  int
		listAll   int
		groups    map[string][]string
		wantError string
	}{
		{yaml: "", unlocked: 0, listAll: 0},
		{yaml: "toolSearch: on\nmaxUnlocked: 12\n", unlocked: 12},
		{yaml: "toolSearch: auto\n", listAll: DefaultListAllUnder},
		{yaml: "toolSearch: auto:800\n", listAll: 800},
		{yaml: "groups:\n  triage: [gh__list_issues, \"chat__*\"]\n", groups: map[string][]string{"triage": {"gh__list_issues", "chat__*"}}},
		{yaml: "toolSearch: off\n", wantError: `c.yaml:1: toolSearch: "off": want on, auto, or auto:N`},
		{yaml: "toolSearch: auto:0\n", wantError: `c.yaml:1: toolSearch: "auto:0"`},
		{yaml: "toolSearch: auto:-5\n", wantError: `c.yaml:1: toolSearch: "auto:-5"`},
		{yaml: "toolSearch: [auto]\n", wantError: "c.yaml:1: toolSearch: "},
		{yaml: "maxUnlocked: 0\n", wantError: "c.yaml:1: maxUnlocked: "},
		{yaml: "groups: [a, b]\n", wantError: "c.yaml:1: groups: want a mapping"},
		{yaml: "groups:\n  triage: gh__x\n", wantError: "c.yaml:2: groups.triage: want a list"},
		{yaml: "groups:\n  triage: [\"gh__[x\"]\n", wantError: "groups.triage[0]: \"gh__[x\" is not a valid pattern"},
		{yaml: "groups:\n  \"tri age\": [x]\n", wantError: "groups.tri age: a group name may use only"},
		{yaml: "gruops: {}\n", wantError: "did you mean groups?"},
	} {
		cfg, err := Parse("c.yaml", []byte(tc.yaml+"mcpServers: {}\n"), env(nil))
		if tc.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantError) {
				t.Errorf("%q: error %v, want one containing %q", tc.yaml, err, tc.wantError)
			}
			continue
		}
		if err != nil || cfg.MaxUnlocked != tc.unlocked || cfg.ListAllUnder != tc.listAll || !reflect.DeepEqual(cfg.Groups, tc.groups) {
			t.Errorf("%q = %+v, %v", tc.yaml, cfg, err)
		}
	}
}

func TestSearchSettings(t *testing.T) {
	vars := env(map[string]string{"OPENAI_API_KEY": "sk-test"})
	for _, tc := range []struct {
		yaml      string
		want      Search
		wantError string
	}{
		{yaml: "", want: Search{Sampling: SamplingOff, SavingsLine: true}},
		{yaml: "search: {sampling: auto}\n", want: Search{Sampling: SamplingAuto, SavingsLine: true}},
		{yaml: "search:\n  sampling: off\n", want: Search{Sampling: SamplingOff, SavingsLine: true}},
		{yaml: "search:\n  embeddings:\n    url: http://127.0.0.1:11434/v1/\n    model: nomic-embed-text\n",
			want: Search{Sampling: SamplingOff, SavingsLine: true, Embeddings: Embeddings{URL: "http://127.0.0.1:11434/v1", Model: "nomic-embed-text", Timeout: DefaultEmbeddingsTimeout}}},
		{yaml: "search:\n  embeddings: {url: \"https://api.openai.com/v1\", model: text-embedding-3-small, apiKey: \"${OPENAI_API_KEY}\", timeout: 2s}\n  sampling: auto\n",
			want: Search{Sampling: SamplingAuto, SavingsLine: true, Embeddings: Embeddings{URL: "https://api.openai.com/v1", Model: "text-embedding-3-small", APIKey: "sk-test", Timeout: 2 * time.Second}}},
		{yaml: "search:\n  savingsLine: false\n", want: Search{Sampling: SamplingOff}},
		{yaml: "search:\n  savingsLine: off\n", wantError: "c.yaml:2: search.savingsLine"},
		{yaml: "search:\n  savingLine: false\n", wantError: "did you mean savingsLine?"},
		{yaml: "search: [a]\n", wantError: "c.yaml:1: search: want a mapping"},
		{yaml: "search:\n  sampling: on\n", wantError: `c.yaml:2: search.sampling: "on": want auto or off`},
		{yaml: "search:\n  sampling: [auto]\n", wantError: "c.yaml:2: search.sampling: want a string"},
		{yaml: "search:\n  smapling: auto\n", wantError: "c.yaml:2: search.smapling: unknown key; did you mean sampling?"},
		{yaml: "search:\n  embedding: {}\n", wantError: "search.embedding: unknown key; did you mean embeddings?"},
		{yaml: "search:\n  embeddings: http://x/v1\n", wantError: "c.yaml:2: search.embeddings: want a mapping with url and model, got a string"},
		{yaml: "search:\n  embeddings:\n    model: m\n", wantError: "c.yaml:3: search.embeddings.url: missing: the base URL"},
		{yaml: "search:\n  embeddings:\n    url: http://x/v1\n", wantError: "c.yaml:3: search.embeddings.model: missing"},
		{yaml: "search:\n  embeddings:\n    url: ftp://x/v1\n    model: m\n", wantError: `c.yaml:3: search.embeddings.url: "ftp://x/v1" is not an http(s) URL`},
		{yaml: "search:\n  embeddings:\n    url: \"\"\n    model: m\n", wantError: "c.yaml:3: search.embeddings.url: empty"},
		{yaml: "search:\n  embeddings:\n    url: http://x/v1\n    model: m\n    timeout: 0s\n", wantError: `c.yaml:5: search.embeddings.timeout: "0s" is not a positive duration`},
		{yaml: "search:\n  embeddings:\n    url: http://x/v1\n    model: m\n    apiKey: ${NOPE}\n", wantError: "c.yaml:5: search.embeddings.apiKey: ${NOPE} is not set"},
		{yaml: "search:\n  embeddings:\n    url: http://x/v1\n    model: m\n    apikey: k\n", wantError: "search.embeddings.apikey: unknown key; did you mean apiKey?"},
	} {
		cfg, err := Parse("c.yaml", []byte(tc.yaml+"mcpServers: {}\n"), vars)
		if tc.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantError) {
				t.Errorf("%q: error %v, want one containing %q", tc.yaml, err, tc.wantError)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(cfg.Search, tc.want) {
			t.Errorf("%q = %+v, %v; want %+v", tc.yaml, cfg.Search, err, tc.want)
		}
	}
	// A mistyped url is reported once, as the typo, not also as missing.
	_, err := Parse("c.yaml", []byte("search:\n  embeddings:\n    ulr: http://x/v1\n    model: m\nmcpServers: {}\n"), vars)
	if err == nil || !strings.Contains(err.Error(), "did you mean url?") || strings.Contains(err.Error(), "missing") {
		t.Errorf("a typo of url: %v", err)
	}
}

func TestExpandEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"$${HOME}", "${HOME}"},
		{"a$${b}c", "a${b}c"},
		{"${V}$${V}", "val${V}"},
		{"$$${V}", "$${V}"}, // $$ then ${V}: only $${ is an escape
		{"$${", "${"},
		{"$$", "$$"},
		{"${V:-$${x}}", "val}"}, // a default ends at the first }: the escape is not nested
	}
	for _, tt := range tests {
		src := "mcpServers:\n  a:\n    command: x\n    env: {E: '" + tt.in + "'}\n"
		cfg, err := Parse("c.yaml", []byte(src), env(map[string]string{"V": "val"}))
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if got := cfg.Servers[0].Env["E"]; got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReadTooLarge(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{big, "/dev/zero"} {
		if _, err := os.Stat(file); err != nil {
			continue
		}
		_, err := Load(file, nil)
		if err == nil || !strings.Contains(err.Error(), "is it the right file?") {
			t.Errorf("Load(%s) = %v, want an error asking whether it is the right file", file, err)
		}
	}
}

func TestUnclosedQuote(t *testing.T) {
	tests := []struct {
		line string
		want rune
	}{
		{`command: "x`, '"'},
		{`command: "x"`, 0},
		{`command: 'it''s`, '\''},
		{`command: 'it''s'`, 0},
		{`args: ["a\"b"]`, 0},
		{`args: ["a\"b]`, '"'},
		{`command: x # don't`, 0},
		{`command: "a # b`, '"'},
		{`url: http://x/it's`, 0},
	}
	for _, tt := range tests {
		if got := unclosedQuote(tt.line); got != tt.want {
			t.Errorf("unclosedQuote(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

// TestProjects parses the servers of one folder and serves them only there.
func TestProjects(t *testing.T) {
	src := `mcpServers:
  fs:
    command: fs-mcp
projects:
  /home/me/src/app:
    mcpServers:
      postgres:
        command: pg-mcp
  /home/me/src/app/web:
    mcpServers:
      browser:
        command: web-mcp
callTimeout: 5s
`
	cfg, err := Parse("c.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := func(c *Config) string {
		var n []string
		for _, s := range c.Servers {
			n = append(n, s.Name)
		}
		return strings.Join(n, ",")
	}
	for _, tt := range []struct{ dir, want, project string }{
		{"", "fs", ""},
		{"/home/me", "fs", ""},
		{"/home/me/src/app", "fs,postgres", "/home/me/src/app"},
		{"/home/me/src/app/cmd/", "fs,postgres", "/home/me/src/app"},
		{"/home/me/src/app/web/ui", "fs,browser", "/home/me/src/app/web"},
		{"/home/me/src/application", "fs", ""},
	} {
		got := cfg.ForProject(tt.dir)
		if names(got) != tt.want || got.Project != tt.project {
			t.Errorf("ForProject(%q) = %s (project %q), want %s (%q)", tt.dir, names(got), got.Project, tt.want, tt.project)
		}
	}
	if names(cfg) != "fs" {
		t.Errorf("ForProject changed the configuration: %s", names(cfg))
	}
	pg := cfg.Projects["/home/me/src/app"][0]
	if pg.Project != "/home/me/src/app" || pg.CallTimeout != 5*time.Second || pg.Path() != "projects./home/me/src/app.mcpServers.postgres" {
		t.Errorf("project server = %+v", pg)
	}

	for _, tt := range []struct{ name, src, want string }{
		{"relative folder", "mcpServers: {}\nprojects:\n  src/app:\n    mcpServers: {}\n", "c.yaml:4: projects.src/app: a project is named by its folder's absolute path"},
		{"a name of every folder", "mcpServers:\n  fs:\n    command: x\nprojects:\n  /p:\n    mcpServers:\n      fs:\n        command: y\n", `c.yaml:8: projects./p.mcpServers.fs: "fs" is also a server of every folder (mcpServers.fs): rename one`},
		{"unknown key", "mcpServers: {}\nprojects:\n  /p:\n    servers: {}\n", "c.yaml:4: projects./p.servers: unknown key; did you mean mcpServers?"},
		{"a prefix of every folder", "mcpServers:\n  fs:\n    command: x\nprojects:\n  /p:\n    mcpServers:\n      files:\n        command: y\n        prefix: fs\n", `projects./p.mcpServers.files.prefix: "fs" is also the prefix of server "fs"`},
		{"a server's own mistake", "mcpServers: {}\nprojects:\n  /p:\n    mcpServers:\n      a:\n        comand: y\n", "c.yaml:6: projects./p.mcpServers.a.comand: unknown key; did you mean command?"},
		{"not a mapping", "mcpServers: {}\nprojects: [a]\n", "c.yaml:2: projects: want a mapping of folders"},
	} {
		_, err := Parse("c.yaml", []byte(tt.src), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestAlwaysLoadOverrides (issue 33, row 12): alwaysLoad: false on a server, or on one of
// its tools, says no to the tools that ask to be always loaded themselves; a tool's own
// setting comes first.
func TestAlwaysLoadOverrides(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte(`mcpServers:
  off:
    command: x
    alwaysLoad: false
  some:
    command: x
    tools:
      scrape: {alwaysLoad: false}
      crawl: {alwaysLoad: true}
  listed:
    command: x
    alwaysLoad: [a]
    tools:
      a: {alwaysLoad: false}
`), func(string) (string, bool) { return "", true })
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Server{}
	for _, s := range cfg.Servers {
		by[s.Name] = s
	}
	tests := []struct {
		server, tool string
		asked, want  bool
	}{
		{"off", "scrape", true, false},
		{"off", "other", false, false},
		{"some", "scrape", true, false},
		{"some", "map", true, true}, // as it asks
		{"some", "crawl", false, true},
		{"some", "other", false, false},
		{"listed", "a", false, false},
		{"listed", "b", true, true},
	}
	for _, tt := range tests {
		s := by[tt.server]
		if got := s.AlwaysLoaded(tt.tool, tt.asked); got != tt.want {
			t.Errorf("%s: AlwaysLoaded(%s, asked %v) = %v, want %v", tt.server, tt.tool, tt.asked, got, tt.want)
		}
	}
	if _, err := Parse("c.yaml", []byte("mcpServers:\n  a:\n    command: x\n    tools:\n      t: {alwaysLoad: maybe}\n"), nil); err == nil || !strings.Contains(err.Error(), "mcpServers.a.tools.t.alwaysLoad") {
		t.Errorf("a non-boolean tool alwaysLoad = %v, want an error naming it", err)
	}
}
