package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/dirs"
	"github.com/toolsift/toolsift/internal/terminal"
	"github.com/toolsift/toolsift/internal/trust"
	"github.com/toolsift/toolsift/oauth"
)

// localConfig is the configuration toolsift looks for in the current folder.
const localConfig = "toolsift.yaml"

// loadConfig loads the configuration file findConfig finds, as served in the project
// toolsift runs for (see projectDir): with that project's servers, if it lists any. A
// folder's file is parsed from the very bytes its approval was checked against: read
// again, it could have been swapped for text nobody approved.
func loadConfig(named string, warn func(string)) (*config.Config, error) {
	file, data, err := locateConfig(named, warn)
	if err != nil {
		return nil, err
	}
	if data == nil {
		if data, err = config.Read(file); err != nil {
			return nil, err
		}
	}
	cfg, err := config.Parse(file, data, nil)
	if err != nil {
		return nil, err
	}
	return cfg.ForProject(projectDir()), nil
}

// projectDir is the folder a client started toolsift for: Claude Code names it in
// CLAUDE_PROJECT_DIR, and clients start their servers in the workspace folder.
func projectDir() string {
	if d := os.Getenv("CLAUDE_PROJECT_DIR"); filepath.IsAbs(d) {
		return d
	}
	d, _ := os.Getwd()
	return d
}

// warnTo returns a warn function for findConfig that writes to w.
func warnTo(w io.Writer) func(string) {
	return func(msg string) { fmt.Fprintln(w, "toolsift:", msg) }
}

// userConfig is the user's own configuration: $XDG_CONFIG_HOME/toolsift/config.yaml.
func userConfig() string {
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		if home, err := os.UserHomeDir(); err == nil {
			xdg = filepath.Join(home, ".config")
		}
	}
	return filepath.Join(xdg, "toolsift", "config.yaml")
}

// findConfig returns the configuration file to use: the one named, else ./toolsift.yaml if
// the user approved it as it is now (see trust), else the user's own. A folder's file that
// is not approved is passed over with a warning that says how to approve it: its servers
// are commands, and a cloned repository must not run them because someone typed
// toolsift status in it. Whoever runs what the file says uses loadConfig, which parses
// the bytes that were approved.
func findConfig(named string, warn func(string)) (string, error) {
	file, _, err := locateConfig(named, warn)
	return file, err
}

// locateConfig is findConfig that also returns, for a folder's file, the content that was
// approved (nil for another file). A folder's file that cannot be read (a symlink to a
// device, a FIFO, a huge or unreadable file) is passed over like an unapproved one: the
// repository is not the user's, and must not keep their own configuration from serving.
func locateConfig(named string, warn func(string)) (string, []byte, error) {
	if named != "" {
		// Naming a file is approving it.
		return named, nil, nil
	}
	user := userConfig()
	_, userErr := os.Stat(user)
	abs, _ := filepath.Abs(localConfig)
	skipped := ""
	data, err := config.ReadRegular(localConfig)
	switch {
	case err == nil:
		ok, why := approved(localConfig, data)
		if ok {
			return localConfig, data, nil
		}
		skipped = fmt.Sprintf("%s is in this folder but not approved, so toolsift does not run its servers%s: review it, then run toolsift trust (or pass --config %s)", terminal.Escape(abs), why, localConfig)
	case !errors.Is(err, fs.ErrNotExist):
		skipped = fmt.Sprintf("%s is in this folder but cannot be used, so toolsift does not run its servers (%s): fix or remove it, or pass --config FILE", terminal.Escape(abs), terminal.Escape(err.Error()))
	}
	if userErr == nil {
		if skipped != "" {
			warn(skipped + "; using " + user + " instead")
		}
		return user, nil, nil
	}
	if skipped != "" {
		return "", nil, errors.New(skipped)
	}
	return "", nil, fmt.Errorf("no configuration: looked for %s and %s; make one from your MCP clients' servers with: toolsift import -o ~/.config/toolsift/config.yaml (or pass --config FILE)",
		localConfig, user)
}

// approved reports whether the user approved the folder's configuration with this content;
// if not, why says what changed, as a clause to add to the warning.
func approved(path string, data []byte) (ok bool, why string) {
	dir, err := dirs.State()
	if err != nil {
		return false, " (" + err.Error() + ")"
	}
	ok, err = trust.Open(dir).Trusted(path, data)
	if err != nil {
		return false, " (" + err.Error() + ")"
	}
	return ok, ""
}

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

// describeServer is one line saying what a server runs or reaches: its whole command line
// (an argument quoted where spaces would hide where it ends), folder or URL. Every part is
// escaped for the terminal: the file is not trusted yet, and a raw escape sequence or
// carriage return in it could paint a harmless command over the one that runs.
func describeServer(s config.Server) string {
	what := terminal.Escape(s.URL)
	if s.Type == config.TypeStdio {
		parts := []string{quoteArg(s.Command)}
		for _, a := range s.Args {
			parts = append(parts, quoteArg(a))
		}
		what = strings.Join(parts, " ")
		if s.Cwd != "" {
			what += " (in " + terminal.Escape(s.Cwd) + ")"
		}
	}
	if s.Disabled {
		what += " (disabled)"
	}
	return terminal.Escape(s.Name) + ": " + what
}

// quoteArg shows one word of a command line: as it is, or quoted (Go syntax) when it is
// empty or holds spaces or quotes, so that the words shown are the words run.
func quoteArg(a string) string {
	if a == "" || strings.ContainsAny(a, " \t\n\r\"'\\") {
		return terminal.Escape(strconv.Quote(a))
	}
	return terminal.Escape(a)
}

// tokens is where servers' OAuth sign-ins are kept (see oauth.NewTokens); nil, and no
// sign-in, without a state folder.
func tokens() *oauth.Tokens {
	dir, err := dirs.State()
	if err != nil {
		return nil
	}
	return oauth.NewTokens(dir)
}
