package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise it comes from
// the module's build info.
var version = ""

// command is one subcommand of the CLI.
type command struct {
	name     string
	synopsis string // its arguments, as in the usage text
	summary  string // one line for the list of commands
	run      func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// commands lists the CLI's subcommands; the usage text is made from it. It is a function
// because the commands' own usage refers back to it.
func commands() []command {
	return []command{
		{"serve", "[--config FILE] [--listen ADDR] [--log-level LEVEL]",
			"serve MCP on stdio, as a client starts it (the default command), or streamable HTTP with --listen", serve},
		{"import", "[--client NAME] [FILE...] [-o FILE] [--force]",
			"write a toolsift config holding your clients' MCP servers (Claude, Cursor, VS Code, Gemini, Codex, opencode)", noStdin(importCmd)},
		{"setup", "CLIENT [--config FILE] [--file CLIENTFILE] [--undo] [--dry-run]",
			"point a client at toolsift in place of its servers, keeping a backup; --undo switches back", noStdin(setupCmd)},
		{"status", "[--config FILE] [--wait 30s]",
			"start every server, show each one's state, tools and last error; warms the catalog cache", noStdin(statusCmd)},
		{"search", "[--config FILE | --tools FILE...] [-n 10] QUERY",
			"print the tools a query finds, ranked as tool_search ranks them", noStdin(searchCmd)},
		{"eval", "--cases FILE [--config FILE | --tools FILE...] [--k 1,3,5] [--min 5=0.9] [--json]",
			"measure search recall@k and MRR on labelled queries", noStdin(evalCmd)},
		{"version", "", "print the version", func(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
			fs := flag.NewFlagSet("version", flag.ContinueOnError)
			if done, err := parseFlags(fs, args, stdout); done || err != nil {
				return err
			}
			fmt.Fprintln(stdout, "toolsift", buildVersion())
			return nil
		}},
		{"help", "[COMMAND]", "show this text, or a command's flags", help},
	}
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
'toolsift --config FILE'; without --config it reads ./toolsift.yaml, then
$XDG_CONFIG_HOME/toolsift/config.yaml (~/.config/toolsift/config.yaml).
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

// parseFlags parses a command's flags. Asked for help (-h, --help), it prints the command's
// usage to stdout and reports done; a mistake is a usage error that says where to look.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (done bool, err error) {
	fs.SetOutput(io.Discard) // flag's own messages would go to stderr twice
	err = fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		printFlags(stdout, fs)
		return true, nil
	}
	if err != nil {
		return true, fmt.Errorf("%w: %v; run 'toolsift %s --help' for its flags", errUsage, err, fs.Name())
	}
	return false, nil
}

func printFlags(w io.Writer, fs *flag.FlagSet) {
	c, _ := lookup(fs.Name())
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

// isTerminal reports whether r is a terminal rather than a client's pipe.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}
