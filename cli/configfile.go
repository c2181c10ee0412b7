package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolsift/toolsift/clients"
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
	return "", nil, fmt.Errorf("no configuration: looked for %s and %s; make one from your MCP clients' servers with: toolsift import -o %s (or pass --config FILE)",
		localConfig, user, tilde(user))
}

// tilde writes a path under the home directory as ~/…, as a user would type it.
func tilde(path string) string {
	home, _ := os.UserHomeDir()
	return clients.Tilde(path, home)
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
