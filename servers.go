package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/dirs"
	"github.com/toolsift/toolsift/internal/redact"
	"github.com/toolsift/toolsift/internal/terminal"
	"github.com/toolsift/toolsift/internal/trust"
)

const addUsage = `Usage: toolsift add [--config FILE] [--project] [-e KEY=VALUE]... NAME -- COMMAND [ARGS...]
       toolsift add [--config FILE] [--project] [--type http|sse] [-H "Name: value"]... NAME --url URL

Adds a server to toolsift's configuration, as claude mcp add adds one to Claude Code's: a
program toolsift starts (after --), or a remote server (--url). The rest of the file,
comments included, is left as it is. The configuration is the one toolsift serves: --config
FILE, else ./toolsift.yaml if approved, else ~/.config/toolsift/config.yaml (made if there is
none). Clients see the server from the next session toolsift serves.

Write a secret as ${VAR} (quote it in the shell: -e 'GITHUB_TOKEN=${GITHUB_TOKEN}') so that
the file holds the variable's name, not its value.

Flags:
  --config FILE      the configuration to change
  --project          serve it only in this project (the working directory, or Claude
                     Code's CLAUDE_PROJECT_DIR): under projects in the configuration
  -e KEY=VALUE       an environment variable for the program (repeatable)
  --url URL          a remote server's address
  --type TYPE        http (streamable HTTP, the default) or sse
  -H "Name: value"   an HTTP header for a remote server (repeatable)
`

const removeUsage = `Usage: toolsift remove [--config FILE] [--project] NAME

Takes a server out of toolsift's configuration (the one toolsift serves, as for add),
leaving the rest of the file as it is; with --project, one of this project's servers. To
keep a server but not run it, write disabled: true under it instead.
`

const listUsage = `Usage: toolsift list [--config FILE]

Prints the configuration toolsift serves and the servers in it, without starting them
(toolsift status starts them and shows their state).
`

// repeated is a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ", ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// addCmd adds a server to the configuration: toolsift add NAME -- COMMAND ARGS... or
// toolsift add NAME --url URL.
func addCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
	}
	fs := flag.NewFlagSet("add", flag.ContinueOnError)
	configFile := fs.String("config", "", "")
	project := fs.Bool("project", false, "")
	url := fs.String("url", "", "")
	typ := fs.String("type", "", "")
	var env, headers repeated
	fs.Var(&env, "e", "")
	fs.Var(&headers, "H", "")
	rest, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("%w: name one server: toolsift add NAME -- COMMAND [ARGS...], or toolsift add NAME --url URL", errUsage)
	}
	name := rest[0]
	var e config.Entry
	switch {
	case *url != "" && len(command) > 0:
		return fmt.Errorf("%w: give a command after -- or --url, not both", errUsage)
	case *url != "":
		if len(env) > 0 {
			return fmt.Errorf("%w: -e sets a program's environment; a remote server takes headers: -H \"Name: value\"", errUsage)
		}
		e = config.Entry{Type: *typ, URL: *url}
		if e.Headers, err = pairs(headers, ":", "-H", `"Authorization: Bearer ${TOKEN}"`); err != nil {
			return err
		}
	case len(command) > 0:
		if *typ != "" || len(headers) > 0 {
			return fmt.Errorf("%w: --type and -H are for a remote server (--url)", errUsage)
		}
		e = config.Entry{Command: command[0], Args: command[1:]}
		if e.Env, err = pairs(env, "=", "-e", "KEY=VALUE"); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: say what %s is: toolsift add %s -- COMMAND [ARGS...] (a program, such as npx -y @modelcontextprotocol/server-memory), or toolsift add %s --url URL", errUsage, name, name, name)
	}
	file, err := editableConfig(*configFile, stderr)
	if err != nil {
		return err
	}
	where, flag := "", ""
	if *project {
		where, flag = ", for project "+projectDir(), " --project"
	}
	err = editConfig(ctx, file, func(data []byte) ([]byte, error) {
		if *project {
			return config.AddProjectServer(data, projectDir(), name, e)
		}
		return config.AddServer(data, name, e)
	})
	if errors.Is(err, config.ErrExists) {
		return fmt.Errorf("%s: %w; to replace it, run toolsift remove%s %s first", file, err, flag, name)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Added %s to %s%s.\nCheck it with: toolsift status --config %s\n", name, file, where, file)
	return nil
}

// removeCmd takes a server out of the configuration: toolsift remove NAME.
func removeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("remove", flag.ContinueOnError)
	configFile := fs.String("config", "", "")
	project := fs.Bool("project", false, "")
	rest, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("%w: name one server: toolsift remove NAME", errUsage)
	}
	file, err := findConfig(*configFile, warnTo(stderr))
	if err != nil {
		return err
	}
	where, dir := "", projectDir()
	if *project {
		where = ", for project " + dir
	}
	err = editConfig(ctx, file, func(data []byte) ([]byte, error) {
		if *project {
			return config.RemoveProjectServer(data, dir, rest[0])
		}
		out, err := config.RemoveServer(data, rest[0])
		if err != nil {
			if _, perr := config.RemoveProjectServer(data, dir, rest[0]); perr == nil {
				return nil, fmt.Errorf("%w; it is a server of project %s: toolsift remove --project %s", err, dir, rest[0])
			}
		}
		return out, err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Removed %s from %s%s.\n", rest[0], file, where)
	return nil
}

// listCmd prints the configuration and its servers: toolsift list.
func listCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	configFile := fs.String("config", "", "")
	rest, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w: unexpected argument %q; list takes only --config", errUsage, rest[0])
	}
	cfg, err := loadConfig(*configFile, warnTo(stderr))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", configLine(cfg))
	// Arguments may carry a secret, such as a database URL's password.
	red := redact.New(cfg.Secrets()...)
	for _, s := range cfg.Servers {
		// Masked before describeServer escapes and quotes: a secret with a quote or a
		// control character in it would no longer be found once escaped.
		s.Command, s.URL, s.Cwd = red.String(s.Command), red.String(s.URL), red.String(s.Cwd)
		s.Args = slices.Clone(s.Args)
		for i, a := range s.Args {
			s.Args[i] = red.String(a)
		}
		line := describeServer(s)
		if s.Broken != "" {
			line = s.Name + ": not started: " + terminal.Escape(s.Broken)
		}
		if s.Project != "" {
			line += " (this project's)"
		}
		fmt.Fprintf(stdout, "  %s\n", red.String(line))
	}
	var others []string
	for dir, servers := range cfg.Projects {
		if dir != cfg.Project {
			others = append(others, fmt.Sprintf("%s (%s)", dir, plural(len(servers), "server")))
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		fmt.Fprintf(stdout, "served only in their folders: %s\n", strings.Join(others, ", "))
	}
	return nil
}

// editableConfig returns the configuration add changes: the one toolsift serves, or,
// where there is none, the user's own (made by the edit).
func editableConfig(named string, stderr io.Writer) (string, error) {
	file, err := findConfig(named, warnTo(stderr))
	if err != nil && named == "" {
		if _, statErr := os.Stat(userConfig()); errors.Is(statErr, fs.ErrNotExist) {
			return userConfig(), nil
		}
	}
	return file, err
}

// editConfig changes the configuration file through config.Edit (locked, re-read, written
// whole), once the change loads. A folder's configuration the user had approved stays
// approved: the change is theirs.
func editConfig(ctx context.Context, file string, change func(old []byte) ([]byte, error)) error {
	return config.Edit(ctx, file, func(old []byte) ([]byte, error) {
		out, err := change(old)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if _, err := config.Parse(file, out, nil); err != nil {
			return nil, fmt.Errorf("the change would make %s invalid, so it was not written: %w", file, err)
		}
		if dir, err := dirs.State(); err == nil && old != nil {
			// Recorded before the write, under the lock: an approval of bytes that were
			// never written approves nothing.
			s := trust.Open(dir)
			if trusted, _ := s.Trusted(file, old); trusted {
				if err := s.Trust(file, out, time.Now()); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	})
}

// pairs splits each of kvs at sep into a map; flag and example say how to write one.
func pairs(kvs []string, sep, flag, example string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: %s %q: write it as %s %s", errUsage, flag, kv, flag, example)
		}
		m[k] = strings.TrimSpace(v)
	}
	return m, nil
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// configLine names the configuration read, the project whose servers it added, and how many
// servers are served.
func configLine(cfg *config.Config) string {
	line := "config: " + absPath(cfg.File)
	if cfg.Project != "" {
		line += ", with the servers of project " + cfg.Project
	}
	return line + " (" + plural(len(cfg.Servers), "server") + ")"
}
