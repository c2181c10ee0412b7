package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/internal/redact"
	"github.com/toolsift/toolsift/internal/terminal"
)

const listUsage = `Usage: toolsift list [--config FILE]

Prints the configuration toolsift serves and the servers in it, without starting them
(toolsift status starts them and shows their state).
`

func init() {
	register(command{
		name: "list", summary: "print the configuration toolsift serves and its servers, without starting them",
		help: listUsage, run: noStdin(listCmd),
	})
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
