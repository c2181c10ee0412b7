package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/dirs"
	"github.com/toolsift/toolsift/internal/terminal"
	"github.com/toolsift/toolsift/internal/trust"
)

const trustUsage = `Usage: toolsift trust [FILE] [--yes] [--forget]

Approves a toolsift configuration found in a folder (FILE, default ./toolsift.yaml), so
that toolsift uses it when run in that folder without --config. A configuration's servers
are commands toolsift runs: one that came with a cloned repository runs only once you have
read it and approved it. trust prints every server the file can start, in any folder (its
projects' too), as it is written, and asks before approving. The approval holds for the
file as it is now; once it is edited, toolsift asks again.

A configuration named with --config needs no approval.

Flags:
  --yes      approve without asking, for scripts that wrote the file themselves
  --forget   withdraw the approval
`

func init() {
	register(command{
		name: "trust", summary: "approve a folder's toolsift.yaml, so that toolsift runs its servers there",
		help: trustUsage, run: func(_ context.Context, args []string, stdin io.Reader, stdout, _ io.Writer) error {
			return trustCmd(args, stdin, stdout)
		},
	})
}

// trustCmd approves, or with --forget withdraws, a folder's configuration. It shows what
// the file runs from the file's own parse (the code that decides what runs), and asks on
// stdin: an answer other than yes, or none, approves nothing.
func trustCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("trust", flag.ContinueOnError)
	forget := fs.Bool("forget", false, "")
	yes := fs.Bool("yes", false, "")
	pos, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if len(pos) > 1 {
		return fmt.Errorf("%w: name at most one file: toolsift trust [FILE]", errUsage)
	}
	file := localConfig
	if len(pos) == 1 {
		file = pos[0]
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	dir, err := dirs.State()
	if err != nil {
		return fmt.Errorf("no folder to keep approvals in: %w", err)
	}
	store := trust.Open(dir)
	shown := terminal.Escape(abs)
	if *forget {
		had, err := store.Forget(abs)
		if err != nil {
			return err
		}
		if !had {
			fmt.Fprintf(stdout, "%s was not approved: nothing to withdraw.\n", shown)
			return nil
		}
		fmt.Fprintf(stdout, "Withdrew the approval of %s: toolsift no longer runs it unless named with --config.\n", shown)
		return nil
	}
	// These bytes are the ones shown, parsed and approved: read once.
	data, err := config.ReadRegular(abs)
	if err != nil {
		return err
	}
	// Variables are shown as written, never with this shell's values: what matters is
	// what the file runs, and a value may be a secret.
	cfg, err := config.Parse(abs, data, func(name string) (string, bool) {
		return "${" + name + "}", true
	})
	if err != nil {
		return fmt.Errorf("%s is not a valid configuration, so it was not approved: %w", shown, err)
	}
	fmt.Fprintf(stdout, "%s runs:\n", shown)
	servers := cfg.AllServers()
	for _, s := range servers {
		line := describeServer(s)
		if s.Project != "" {
			line += " (in project " + terminal.Escape(s.Project) + ")"
		}
		fmt.Fprintf(stdout, "  %s\n", line)
	}
	if len(servers) == 0 {
		fmt.Fprintln(stdout, "  (no servers)")
	}
	if e := cfg.Search.Embeddings; e.URL != "" {
		fmt.Fprintf(stdout, "and sends tool descriptions to %s for search embeddings\n", terminal.Escape(e.URL))
	}
	if !*yes {
		if err := confirm(stdin, stdout, "Approve it? [y/N] "); err != nil {
			return fmt.Errorf("%s was not approved: %w", shown, err)
		}
	}
	if err := store.Trust(abs, data, time.Now()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Approved: toolsift uses it in %s until it changes.\n", terminal.Escape(filepath.Dir(abs)))
	return nil
}

// confirm asks question on stdout and reads one line of answer from stdin; anything but
// y or yes is an error. No answer at all (no terminal, stdin closed) refuses too: approving
// is the user's decision, and a script that made it says so with --yes.
func confirm(stdin io.Reader, stdout io.Writer, question string) error {
	fmt.Fprint(stdout, question)
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 1<<10)).ReadString('\n')
	if err != nil && (!errors.Is(err, io.EOF) || line == "") {
		fmt.Fprintln(stdout)
		return errors.New("no answer (no terminal to ask at?): run toolsift trust --yes to approve without asking")
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("the answer was %q, not yes", terminal.Escape(strings.TrimSpace(line)))
}
