package clients

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

var (
	// braceVar is ${...} as VS Code and Cursor write variables.
	braceVar = regexp.MustCompile(`\$\{([^}]*)\}`)
	// envRef is a reference toolsift's configuration expands: ${VAR} or ${VAR:-default}.
	envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)
	// geminiVar is $VAR or ${VAR}, which Gemini CLI expands.
	geminiVar = regexp.MustCompile(`\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([^}]*)\})`)
	// opencodeVar is {env:VAR} or {file:PATH}, which opencode expands.
	opencodeVar = regexp.MustCompile(`\{(env|file):([^}]*)\}`)
)

// vars translates the client's variable syntax in every string of s into toolsift's
// ${VAR}, reporting what has no translation.
func (f *file) vars(s *Server, opts Options) {
	var tr func(string) string
	client := f.src.Kind.Title()
	literal := func(v string) {
		// This client passes ${VAR} through untouched, but toolsift expands it.
		for _, m := range envRef.FindAllStringSubmatch(v, -1) {
			s.note("%s is passed as is by %s, but toolsift reads it as the environment variable %s", m[0], client, m[1])
		}
	}
	switch f.src.Kind {
	case ClaudeCode, Copilot:
		return // Claude Code and Copilot CLI expand ${VAR}, as toolsift does.
	case ClaudeDesktop, Codex:
		tr = func(v string) string { literal(v); return v }
	case Gemini:
		tr = func(v string) string {
			return geminiVar.ReplaceAllStringFunc(v, func(ref string) string {
				m := geminiVar.FindStringSubmatch(ref)
				name := m[1] + m[2]
				if !envRef.MatchString("${" + name + "}") {
					s.note("%s is not a variable name toolsift knows: left as is", ref)
					return ref
				}
				return "${" + name + "}"
			})
		}
	case OpenCode:
		tr = func(v string) string {
			literal(v)
			return opencodeVar.ReplaceAllStringFunc(v, func(ref string) string {
				m := opencodeVar.FindStringSubmatch(ref)
				if m[1] == "env" {
					return "${" + m[2] + "}"
				}
				s.note("%s reads a file, which toolsift cannot: left as is; put the value in an environment variable and write ${VAR}", ref)
				return ref
			})
		}
	case Cursor, VSCode:
		tr = func(v string) string {
			return braceVar.ReplaceAllStringFunc(v, func(ref string) string { return f.editorVar(s, ref, opts) })
		}
	}
	s.Command = tr(s.Command)
	for i, a := range s.Args {
		s.Args[i] = tr(a)
	}
	for k, v := range s.Env {
		s.Env[k] = tr(v)
	}
	s.Cwd = tr(s.Cwd)
	s.URL = tr(s.URL)
	for k, v := range s.Headers {
		s.Headers[k] = tr(v)
	}
}

// editorVar translates one ${...} of VS Code or Cursor.
func (f *file) editorVar(s *Server, ref string, opts Options) string {
	inner := ref[2 : len(ref)-1]
	name, arg, hasArg := strings.Cut(inner, ":")
	workspace := f.src.Project
	switch {
	case hasArg && name == "env":
		return "${" + arg + "}"
	case hasArg && name == "input":
		v := envName(arg)
		what := ""
		if d := f.inputs[arg]; d != "" {
			what = fmt.Sprintf(" (%q)", d)
		}
		s.note("%s is a prompt%s %s shows, which toolsift cannot: replaced with ${%s}; export %s where toolsift starts", ref, what, f.src.Kind.Title(), v, v)
		return "${" + v + "}"
	case inner == "userHome" && opts.Home != "":
		return opts.Home
	case inner == "workspaceFolder" || inner == "workspaceFolderBasename":
		if workspace == "" {
			if opts.Dir == "" {
				s.note("%s has no value outside a workspace: left as is", ref)
				return ref
			}
			workspace = opts.Dir
			s.note("%s has no value in a user-level file: used %s, where the import ran", ref, opts.Dir)
		}
		if inner == "workspaceFolderBasename" {
			return filepath.Base(workspace)
		}
		return workspace
	case inner == "pathSeparator" || inner == "/":
		return string(filepath.Separator)
	}
	if envRef.MatchString(ref) {
		s.note("%s is not a %s variable toolsift knows: toolsift reads it as the environment variable %s", ref, f.src.Kind.Title(), inner)
	} else {
		s.note("%s is not a %s variable toolsift knows: left as is", ref, f.src.Kind.Title())
	}
	return ref
}

// envName makes an environment variable name of a VS Code input id: "github-token" becomes
// GITHUB_TOKEN.
func envName(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(unicode.ToUpper(r))
		default:
			b.WriteByte('_')
		}
	}
	name := strings.Trim(b.String(), "_")
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		name = "INPUT_" + name
	}
	return name
}
