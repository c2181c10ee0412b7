package config

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is one problem in a configuration file, located by line and key path.
type Error struct {
	File string
	Line int
	// Path is the dotted key path, such as mcpServers.github.args.
	Path string
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Path == "" {
		return loc + ": " + e.Msg
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Path, e.Msg)
}

// syntaxError locates a YAML syntax error on the line that causes it. yaml.v3 reports the
// line where the enclosing block starts (a mis-indented key on line 4 reads "line 1: did not
// find expected key"), so this finds the first line at which the text stops parsing with
// the same complaint.
func syntaxError(file string, data []byte, err error) error {
	_, msg := splitYAMLError(err)
	lines := strings.SplitAfter(string(data), "\n")
	var doc yaml.Node
	for n := 1; n <= len(lines); n++ {
		perr := yaml.Unmarshal([]byte(strings.Join(lines[:n], "")), &doc)
		if perr == nil {
			continue
		}
		if _, m := splitYAMLError(perr); m == msg {
			text := strings.TrimRight(lines[n-1], "\r\n")
			hint := ""
			if strings.HasPrefix(strings.TrimLeft(text, " "), "\t") {
				hint = "; YAML indents with spaces, not tabs"
			} else if q := unclosedQuote(text); q != 0 {
				hint = fmt.Sprintf("; the %c opened on this line is not closed", q)
			} else if msg == "did not find expected key" || strings.Contains(msg, "mapping values are not allowed") {
				hint = "; check this line's indentation against the lines above"
			}
			return &Error{File: file, Line: n, Msg: fmt.Sprintf("YAML syntax: %s%s: %q", msg, hint, text)}
		}
	}
	line, _ := splitYAMLError(err)
	return &Error{File: file, Line: line, Msg: "YAML syntax: " + msg}
}

// unclosedQuote returns the quote character (" or ') that a line opens and does not close,
// or 0. A quote opens a scalar only where one starts (after "key: ", "- ", "[", "{" or ",");
// inside double quotes a backslash escapes, and inside single quotes two quotes stand for
// one.
func unclosedQuote(line string) rune {
	var open rune
	start := true // at a place where a scalar may start
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case open == '"' && c == '\\':
			i++
		case open == '\'' && c == '\'' && i+1 < len(line) && line[i+1] == '\'':
			i++
		case open != 0 && rune(c) == open:
			open, start = 0, false
		case open != 0:
		case c == '#' && (i == 0 || line[i-1] == ' '):
			return 0 // a comment
		case start && (c == '"' || c == '\''):
			open = rune(c)
		case c == ' ' || c == '\t':
		case c == '[' || c == '{' || c == ',' || (c == ':' || c == '-') && (i+1 == len(line) || line[i+1] == ' '):
			start = true
		default:
			start = false
		}
	}
	return open
}

// splitYAMLError splits yaml.v3's "yaml: line N: message" into N and message.
func splitYAMLError(err error) (line int, msg string) {
	msg = strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, m, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil {
				return n, m
			}
		}
	}
	return 0, msg
}

// The keys each level of the configuration knows, for the message about one it does not.
var (
	topKeys     = []string{"mcpServers", "listen", "auth", "allowedOrigins", "sessionIdleTimeout", "readTimeout", "maxConnections", "maxSessions", "maxSessionsPerToken", "publicUrl", "audit", "metrics", "tracing", "state", "lazyStart", "idleTimeout", "startupTimeout", "callTimeout", "maxCalls", "maxResultBytes", "concurrency", "maxUnlocked", "toolSearch", "groups", "search", "projects"}
	projectKeys = []string{"mcpServers"}
	authKeys    = []string{"tokens", "oidc"}
	serverKeys  = []string{"type", "command", "args", "env", "cwd", "url", "headers", "prefix", "description", "alwaysLoad", "allow", "deny", "disabled", "tools", "callTimeout", "startupTimeout", "lazyStart", "idleTimeout", "maxResultBytes", "concurrency", "oauth", "access", "pin"}
	oauthKeys   = []string{"clientId", "clientSecret", "scopes", "redirectUri", "clientMetadataUrl"}
	toolKeys    = []string{"keywords", "description", "alwaysLoad", "access"}
	searchKeys  = []string{"embeddings", "sampling", "savingsLine"}
	// embeddingsKeys are the keys of search.embeddings.
	embeddingsKeys = []string{"url", "model", "apiKey", "timeout"}
)

// unknownKey reports a key that is not one of known, naming the known key it is most
// likely a typo of. A client's own config file pasted whole is pointed at toolsift import.
func (p *parser) unknownKey(n *yaml.Node, at, key string, known []string) {
	msg := "unknown key"
	near := nearest(key, known)
	if near != "" {
		msg += "; did you mean " + near + "?"
		if p.guessed == nil {
			p.guessed = map[string]bool{}
		}
		p.guessed[strings.TrimSuffix(at, key)+near] = true
	}
	msg += " (known: " + strings.Join(known, ", ") + ")"
	// A top-level key that is no typo, or VS Code's servers, is likely a client's whole
	// config file pasted in.
	if !strings.Contains(at, ".") && (near == "" || key == "servers") {
		msg += "; to convert a client's config file (Claude, Cursor, VS Code, Gemini, Codex, opencode, Copilot CLI), run: toolsift import FILE"
	}
	p.errorf(n, at, "%s", msg)
}

// nearest returns the word of known closest to key: equal but for case, or within a few
// edits (a third of its length, at least one), or ending in it (servers: mcpServers); ""
// if none is.
func nearest(key string, known []string) string {
	best, bestDist := "", max(1, len(key)/3)+1
	for _, k := range known {
		if strings.EqualFold(k, key) || len(key) >= 4 && strings.HasSuffix(strings.ToLower(k), strings.ToLower(key)) {
			return k
		}
		if d := editDistance(strings.ToLower(key), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the edit distance between a and b, in bytes, counting a swap of two
// neighbours as one edit (ulr for url), as typing mistakes go.
func editDistance(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			rows[i][j] = min(rows[i-1][j-1]+cost, rows[i-1][j]+1, rows[i][j-1]+1)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				rows[i][j] = min(rows[i][j], rows[i-2][j-2]+1)
			}
		}
	}
	return rows[len(a)][len(b)]
}

func (p *parser) errorf(n *yaml.Node, at, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Path: at, Msg: fmt.Sprintf(format, args...)})
}
