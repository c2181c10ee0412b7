package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/dirs"
	"github.com/toolsift/toolsift/internal/trust"
	"github.com/toolsift/toolsift/oauth"
)

// localConfig is the configuration toolsift looks for in the current folder.
const localConfig = "toolsift.yaml"

// loadConfig loads the configuration file findConfig finds, as served in the project
// toolsift runs for (see projectDir): with that project's servers, if it lists any.
func loadConfig(named string, warn func(string)) (*config.Config, error) {
	file, err := findConfig(named, warn)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(file, nil)
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
// toolsift status in it.
func findConfig(named string, warn func(string)) (string, error) {
	if named != "" {
		// Naming a file is approving it.
		return named, nil
	}
	user := userConfig()
	_, userErr := os.Stat(user)
	unapproved := ""
	if data, err := config.Read(localConfig); err == nil {
		ok, why := approved(localConfig, data)
		if ok {
			return localConfig, nil
		}
		abs, _ := filepath.Abs(localConfig)
		unapproved = fmt.Sprintf("%s is in this folder but not approved, so toolsift does not run its servers%s: review it, then run toolsift trust (or pass --config %s)", abs, why, localConfig)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if userErr == nil {
		if unapproved != "" {
			warn(unapproved + "; using " + user + " instead")
		}
		return user, nil
	}
	if unapproved != "" {
		return "", errors.New(unapproved)
	}
	return "", fmt.Errorf("no configuration: looked for %s and %s; make one from your MCP clients' servers with: toolsift import -o ~/.config/toolsift/config.yaml (or pass --config FILE)",
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

const trustUsage = `Usage: toolsift trust [FILE] [--forget]

Approves a toolsift configuration found in a folder (FILE, default ./toolsift.yaml), so
that toolsift uses it when run in that folder without --config. A configuration's servers
are commands toolsift runs: one that came with a cloned repository runs only once you have
read it and approved it. The approval holds for the file as it is now; once it is edited,
toolsift asks again. It prints the servers the file runs.

A configuration named with --config needs no approval.

Flags:
  --forget   withdraw the approval
`

// trustCmd approves, or with --forget withdraws, a folder's configuration.
func trustCmd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("trust", flag.ContinueOnError)
	forget := fs.Bool("forget", false, "")
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
	if *forget {
		had, err := store.Forget(abs)
		if err != nil {
			return err
		}
		if !had {
			fmt.Fprintf(stdout, "%s was not approved: nothing to withdraw.\n", abs)
			return nil
		}
		fmt.Fprintf(stdout, "Withdrew the approval of %s: toolsift no longer runs it unless named with --config.\n", abs)
		return nil
	}
	data, err := config.Read(abs)
	if err != nil {
		return err
	}
	// A variable not set here is shown as written: what matters is what the file runs.
	cfg, err := config.Parse(abs, data, func(name string) (string, bool) {
		if v, ok := os.LookupEnv(name); ok {
			return v, true
		}
		return "${" + name + "}", true
	})
	if err != nil {
		return fmt.Errorf("%s is not a valid configuration, so it was not approved: %w", abs, err)
	}
	fmt.Fprintf(stdout, "%s runs:\n", abs)
	for _, s := range cfg.Servers {
		fmt.Fprintf(stdout, "  %s\n", describeServer(s))
	}
	if len(cfg.Servers) == 0 {
		fmt.Fprintln(stdout, "  (no servers)")
	}
	if err := store.Trust(abs, data, time.Now()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Approved: toolsift uses it in %s until it changes.\n", filepath.Dir(abs))
	return nil
}

// describeServer is one line saying what a server runs or reaches.
func describeServer(s config.Server) string {
	what := s.URL
	if s.Type == config.TypeStdio {
		what = strings.Join(append([]string{s.Command}, s.Args...), " ")
		if s.Cwd != "" {
			what += " (in " + s.Cwd + ")"
		}
	}
	if s.Disabled {
		what += " (disabled)"
	}
	return s.Name + ": " + what
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
