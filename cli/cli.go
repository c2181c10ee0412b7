// Package cli is toolsift's command line. Each command lives in a file of its own and
// registers itself (register) in the table that the dispatch and the usage text are made
// from; the helpers the commands share (flags here, finding and trusting a config in
// configfile.go, the build's version in version.go) call no command.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/toolsift/toolsift/internal/terminal"
)

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

// commands holds the CLI's subcommands by name. Each command's file registers it (register,
// from its init); the dispatch and the usage text are made from it.
var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("cli: command " + c.name + " registered twice")
	}
	commands[c.name] = c
}

// listed is the order of the usage text's list of commands: what a newcomer needs first.
// A command not named here comes after them, by name.
var listed = []string{"serve", "import", "setup", "add", "remove", "list", "auth", "token", "trust", "status", "search", "eval", "version", "help"}

// ordered returns the registered commands in the usage text's order.
func ordered() []command {
	var out []command
	for _, name := range listed {
		if c, ok := commands[name]; ok {
			out = append(out, c)
		}
	}
	var rest []string
	for name := range commands {
		if !slices.Contains(listed, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	for _, name := range rest {
		out = append(out, commands[name])
	}
	return out
}

func init() {
	register(command{
		name: "help", synopsis: "[COMMAND]", summary: "show this text, or a command's flags",
		run: help,
	})
}

func noStdin(f func(ctx context.Context, args []string, stdout, stderr io.Writer) error) func(context.Context, []string, io.Reader, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return f(ctx, args, stdout, stderr)
	}
}

func lookup(name string) (command, bool) {
	c, ok := commands[name]
	return c, ok
}

// usage is the CLI's help text.
func usage() string {
	var b strings.Builder
	b.WriteString("toolsift: one MCP server in front of many, with tools unlocked by search.\n\nUsage: toolsift [COMMAND] [FLAGS]\n\nCommands:\n")
	for _, c := range ordered() {
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
			return fmt.Errorf("%w: unknown command %q%s; run 'toolsift help' for the list", errUsage, args[0], didYouMean(args[0]))
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
			return nil, true, fmt.Errorf("%w: %v%s; run 'toolsift %s --help' for its flags", errUsage, err, durationHint(fs, args), fs.Name())
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, false, nil
		}
		rest, args = append(rest, args[0]), args[1:]
	}
}

// repeated is a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ", ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

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

// didYouMean suggests the command a mistyped name is closest to, if one is close.
func didYouMean(name string) string {
	best, dist := "", 3 // at most two edits away
	for _, c := range ordered() {
		if d := editDistance(name, c.name); d < dist {
			best, dist = c.name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// durationHint is a hint for a duration flag given a bare number, as in --wait 2: Go's
// durations take a unit.
func durationHint(fs *flag.FlagSet, args []string) string {
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if g, ok := f.Value.(flag.Getter); !ok {
			continue
		} else if _, isDuration := g.Get().(time.Duration); !isDuration {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		if _, err := strconv.ParseFloat(value, 64); err == nil {
			return fmt.Sprintf(" (a duration takes a unit: did you mean %ss or %sm?)", value, value)
		}
	}
	return ""
}

// errUsage marks command-line mistakes, which exit with status 2.
var errUsage = errors.New("usage")

func exitCode(err error) int {
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

// Main runs the command line and returns the process's exit status. An error is printed
// to stderr escaped: it can quote a remote's or a repo's text, which must not act on the
// terminal.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := run(ctx, args, stdin, stdout, stderr)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "toolsift:", terminal.Lines(err.Error()))
	return exitCode(err)
}

// run is the whole program but for printing its error.
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
		return fmt.Errorf("%w: unknown command %q%s; run 'toolsift help' for the list", errUsage, name, didYouMean(name))
	}
	return c.run(ctx, args, stdin, stdout, stderr)
}

// isTerminal reports whether r is a terminal rather than a client's pipe (or /dev/null, as
// a service manager gives it).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
