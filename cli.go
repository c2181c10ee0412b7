package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"golang.org/x/term"
)

// version and commit are set by a release build (scripts/dist.sh) with -ldflags
// "-X main.version=… -X main.commit=…"; otherwise they come from the build info: the module
// version of go install …@vX.Y.Z, or the checkout's commit of go build.
var version, commit = "", ""

// command is one subcommand of the CLI.
type command struct {
	name     string
	synopsis string // its arguments, as in the usage text
	summary  string // one line for the list of commands
	// help, if set, is the whole text of COMMAND --help; otherwise it is made from the
	// synopsis, the summary and the flags.
	help string
	run  func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// commands lists the CLI's subcommands; the usage text is made from it. It is a function
// because the commands' own usage refers back to it.
func commands() []command {
	return []command{{
		name: "serve", synopsis: "[--config FILE] [--listen ADDR] [--log-level LEVEL]",
		summary: "serve MCP on stdio, as a client starts it (the default command), or streamable HTTP with --listen",
		run:     serve,
	}, {
		name: "import", summary: "write a toolsift config holding your clients' MCP servers (Claude, Cursor, VS Code, Gemini, Codex, opencode, Copilot)",
		help: importUsage, run: noStdin(importCmd),
	}, {
		name: "setup", summary: "point a client at toolsift in place of its servers, keeping a backup; --undo switches back",
		help: setupUsage, run: noStdin(setupCmd),
	}, {
		name: "add", summary: "add a server to the configuration: add NAME -- COMMAND ARGS..., or add NAME --url URL",
		help: addUsage, run: noStdin(addCmd),
	}, {
		name: "remove", summary: "take a server out of the configuration",
		help: removeUsage, run: noStdin(removeCmd),
	}, {
		name: "list", summary: "print the configuration toolsift serves and its servers, without starting them",
		help: listUsage, run: noStdin(listCmd),
	}, {
		name: "auth", summary: "sign in to, and out of, the remote servers that ask for OAuth (login NAME, status, logout NAME)",
		help: authUsage, run: noStdin(authCmd),
	}, {
		name: "trust", summary: "approve a folder's toolsift.yaml, so that toolsift runs its servers there",
		help: trustUsage, run: func(_ context.Context, args []string, stdin io.Reader, stdout, _ io.Writer) error {
			return trustCmd(args, stdin, stdout)
		},
	}, {
		name: "status", synopsis: "[--config FILE] [--wait 30s]",
		summary: "start every server, show each one's state, tools and last error; warms the catalog cache",
		run:     noStdin(statusCmd),
	}, {
		name: "search", synopsis: "[--config FILE | --tools FILE...] [-n 10] QUERY",
		summary: "print the tools a query finds, ranked as tool_search ranks them",
		run:     noStdin(searchCmd),
	}, {
		name: "eval", synopsis: "--cases FILE [--config FILE | --tools FILE...] [--k 1,3,5] [--min 5=0.9] [--json]",
		summary: "measure search recall@k and MRR on labelled queries",
		run:     noStdin(evalCmd),
	}, {
		name: "version", summary: "print the version",
		run: func(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
			fs := flag.NewFlagSet("version", flag.ContinueOnError)
			if _, done, err := parseFlags(fs, args, stdout); done || err != nil {
				return err
			}
			fmt.Fprintln(stdout, versionLine())
			return nil
		},
	}, {
		name: "help", synopsis: "[COMMAND]", summary: "show this text, or a command's flags",
		run: help,
	}}
}

func noStdin(f func(ctx context.Context, args []string, stdout, stderr io.Writer) error) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return f(ctx, args, stdout, stderr)
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usage is the CLI's help text.
func usage() string {
	var b strings.Builder
	b.WriteString("toolsift: one MCP server in front of many, with tools unlocked by search.\n\nUsage: toolsift [COMMAND] [FLAGS]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
	}
	b.WriteString(`
Run 'toolsift COMMAND --help' for a command's flags. A client starts toolsift as
'toolsift --config FILE'; without --config it reads ./toolsift.yaml if you approved it
(toolsift trust), else $XDG_CONFIG_HOME/toolsift/config.yaml (~/.config/toolsift/config.yaml).
`)
	return b.String()
}

func help(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		c, ok := lookup(args[0])
		if !ok {
			return fmt.Errorf("%w: unknown command %q; run 'toolsift help' for the list", errUsage, args[0])
		}
		return c.run(context.Background(), []string{"--help"}, nil, stdout, io.Discard)
	}
	fmt.Fprint(stdout, usage())
	return nil
}

// parseFlags parses a command's flags, which may come before, between or after its other
// arguments; it returns those. Asked for help (-h, --help), it prints the command's usage
// to stdout and reports done; a mistake is a usage error that says where to look.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (rest []string, done bool, err error) {
	fs.SetOutput(io.Discard) // flag's own messages would go to stderr twice
	for {
		err = fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			printFlags(stdout, fs)
			return nil, true, nil
		}
		if err != nil {
			return nil, true, fmt.Errorf("%w: %v; run 'toolsift %s --help' for its flags", errUsage, err, fs.Name())
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, false, nil
		}
		rest, args = append(rest, args[0]), args[1:]
	}
}

func printFlags(w io.Writer, fs *flag.FlagSet) {
	c, _ := lookup(fs.Name())
	if c.help != "" {
		fmt.Fprint(w, c.help)
		return
	}
	fmt.Fprintf(w, "Usage: toolsift %s %s\n\n%s.\n", c.name, c.synopsis, strings.ToUpper(c.summary[:1])+c.summary[1:])
	fs.SetOutput(w)
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		fs.PrintDefaults()
	}
	fs.SetOutput(io.Discard)
}

// errUsage marks command-line mistakes, which exit with status 2.
var errUsage = errors.New("usage")

func exitCode(err error) int {
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

// run is the whole program: main only adds signals and the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 && isTerminal(stdin) {
		// A person typed "toolsift": a client never starts it on a terminal.
		fmt.Fprint(stdout, usage())
		return nil
	}
	name := "serve"
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			fmt.Fprint(stdout, usage())
			return nil
		case "-version", "--version", "-v":
			name, args = "version", args[1:]
		default:
			if !strings.HasPrefix(args[0], "-") {
				name, args = args[0], args[1:]
			}
		}
	}
	c, ok := lookup(name)
	if !ok {
		return fmt.Errorf("%w: unknown command %q; run 'toolsift help' for the list", errUsage, name)
	}
	return c.run(ctx, args, stdin, stdout, stderr)
}

// isTerminal reports whether r is a terminal rather than a client's pipe (or /dev/null, as
// a service manager gives it).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func buildVersion() string {
	v, _ := build()
	return v
}

// versionLine is what toolsift --version prints: the version, and the commit when known,
// so that a bug report says which build it came from.
func versionLine() string {
	v, c := build()
	if c == "" {
		return "toolsift " + v
	}
	return "toolsift " + v + " (commit " + c + ")"
}

// build returns the version and commit this binary was built from: those stamped by a
// release build, else what the Go toolchain recorded.
func build() (v, c string) {
	v, c = version, commit
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return cmp.Or(v, "dev"), c
	}
	return buildInfo(v, c, info)
}

func buildInfo(v, c string, info *debug.BuildInfo) (string, string) {
	if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			if c == "" {
				c = s.Value[:min(12, len(s.Value))]
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if c != "" && modified && !strings.HasSuffix(c, "+dirty") {
		c += "+dirty"
	}
	return cmp.Or(v, "dev"), c
}
