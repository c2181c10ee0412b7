package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/dirs"
	"github.com/toolsift/toolsift/internal/terminal"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/upstream"
)

const authUsage = `Usage: toolsift auth login NAME [--config FILE] [--no-browser] [--timeout 5m]
       toolsift auth status [--config FILE]
       toolsift auth logout NAME [--config FILE]

Signs toolsift in to a remote server that asks for OAuth (most remote MCP servers:
Atlassian, Notion, Linear, GitHub's, Slack's …), once; toolsift refreshes the token from
then on, and a running toolsift picks the sign-in up within seconds.

login opens the sign-in page with $BROWSER, else the system's browser, and prints its
address on stderr; it waits for the browser to come back to 127.0.0.1, then keeps the
tokens in the OS keyring, or where there is none under toolsift's state folder (mode
0600). A server without dynamic registration needs an OAuth app of yours: put its
client ID and secret under mcpServers.NAME.oauth (see config.example.yaml).

status lists each server that signs in: "signed in" with the expiry, or "needs login".
logout forgets the sign-in, and revokes it where the server offers that; NAME may be a
server no longer in the configuration (status lists such sign-ins), or a server's URL.

Flags:
  --config FILE   the configuration (default as for every command)
  --no-browser    print the address only, to open by hand (on another machine, say)
  --timeout D     how long login waits for the browser (default 5m)
`

func init() {
	register(command{
		name: "auth", summary: "sign in to, and out of, the remote servers that ask for OAuth (login NAME, status, logout NAME)",
		help: authUsage, run: noStdin(authCmd),
	})
}

func authCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("auth", flag.ContinueOnError)
	configFile := fs.String("config", "", "")
	noBrowser := fs.Bool("no-browser", false, "")
	timeout := fs.Duration("timeout", 5*time.Minute, "")
	pos, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: say what to do: toolsift auth login NAME, auth status or auth logout NAME", errUsage)
	}
	verb, rest := pos[0], pos[1:]
	want := map[string]int{"login": 1, "logout": 1, "status": 0}
	n, ok := want[verb]
	if !ok {
		return fmt.Errorf("%w: unknown auth command %q: login, status or logout", errUsage, verb)
	}
	if len(rest) != n {
		if n == 1 {
			return fmt.Errorf("%w: name one server: toolsift auth %s NAME", errUsage, verb)
		}
		return fmt.Errorf("%w: toolsift auth status takes no server name", errUsage)
	}
	cfg, err := loadConfig(*configFile, warnTo(stderr))
	if err != nil {
		return err
	}
	state, err := dirs.State()
	if err != nil {
		return fmt.Errorf("no folder to keep sign-ins in: %w", err)
	}
	tokens := oauth.NewTokens(state)
	if verb == "status" {
		return authStatus(ctx, cfg, tokens, stdout)
	}
	if verb == "logout" {
		return authLogout(ctx, cfg, tokens, rest[0], stdout)
	}
	srv, err := remoteServer(cfg, rest[0])
	if err != nil {
		return err
	}
	login := &oauth.Login{Tokens: tokens, Server: srv, ConfigFile: cfg.File, Out: stderr, Timeout: *timeout}
	if !*noBrowser {
		login.Open = openBrowser
	}
	g, err := login.Run(ctx)
	if errors.Is(err, oauth.ErrNotAsked) {
		fmt.Fprintf(stdout, "%s answered without asking to sign in: nothing to do.\n", srv.Name)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: signed in with %s%s. A running toolsift picks it up within seconds.\n", srv.Name, terminal.Escape(g.Issuer), expiry(g, time.Now()))
	return nil
}

// remoteServer returns the configured server name, which must be one that can sign in.
func remoteServer(cfg *config.Config, name string) (config.Server, error) {
	for _, s := range cfg.Servers {
		if s.Name != name {
			continue
		}
		if !upstream.SignsIn(s) {
			if s.Type == config.TypeStdio {
				return s, fmt.Errorf("%s is a local (stdio) server: it takes its credentials from env, not from a sign-in", name)
			}
			return s, fmt.Errorf("%s sends the Authorization header set in %s: remove it to sign in with OAuth instead", name, cfg.File)
		}
		return s, nil
	}
	var remote []string
	for _, s := range cfg.Servers {
		if upstream.SignsIn(s) {
			remote = append(remote, s.Name)
		}
	}
	return config.Server{}, fmt.Errorf("%w: no server %q in %s (remote servers there: %s)", errUsage, name, cfg.File, strings.Join(remote, ", "))
}

// authLogout forgets the sign-ins that name, a server's name or URL, stands for: the
// configured server's, and any stored under that name or URL that no configured server
// uses any more (a server removed from the configuration keeps its tokens until then).
func authLogout(ctx context.Context, cfg *config.Config, tokens *oauth.Tokens, name string, stdout io.Writer) error {
	stored, err := tokens.Store.List(ctx)
	if err != nil {
		return err
	}
	var oc *config.OAuth
	keys := map[string]bool{}
	for _, s := range cfg.Servers {
		if s.Name == name && upstream.SignsIn(s) {
			// A grant kept under the name by an earlier version moves under its key first.
			_, _ = tokens.Grant(ctx, s.Name, s.URL)
			keys[oauth.Key(s.URL)], oc = true, s.OAuth
		}
	}
	if strings.Contains(name, "://") {
		keys[oauth.Key(name)] = true
	}
	for key, g := range stored {
		if key == name || g.Server == name && !inUse(cfg, key) {
			keys[key] = true
		}
	}
	forgot := 0
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		g := stored[key]
		had, err := tokens.Logout(ctx, key, oc)
		if err != nil {
			return err
		}
		if had {
			forgot++
			where := ""
			if g != nil {
				where = " (" + terminal.Escape(g.URL) + ")"
			}
			fmt.Fprintf(stdout, "%s%s: signed out (the sign-in is forgotten, and revoked where the server offers that).\n", name, where)
		}
	}
	if forgot == 0 {
		fmt.Fprintf(stdout, "%s: not signed in; nothing to forget.\n", name)
	}
	return nil
}

// inUse reports whether a configured server's grant is stored under key.
func inUse(cfg *config.Config, key string) bool {
	for _, s := range cfg.Servers {
		if upstream.SignsIn(s) && (oauth.Key(s.URL) == key || s.Name == key) {
			return true
		}
	}
	return false
}

// authStatus prints a line for each remote server that has a sign-in or an oauth block,
// and for each stored sign-in that no configured server uses; never a token. What came
// from an authorization server is escaped: it reaches a terminal.
func authStatus(ctx context.Context, cfg *config.Config, tokens *oauth.Tokens, stdout io.Writer) error {
	now := time.Now()
	shown := 0
	for _, s := range cfg.Servers {
		if !upstream.SignsIn(s) {
			continue
		}
		g, err := tokens.Grant(ctx, s.Name, s.URL)
		var moved *oauth.MovedError
		switch {
		case errors.As(err, &moved):
			fmt.Fprintf(stdout, "%s  needs login (%s)\n", s.Name, terminal.Escape(moved.Error()))
		case errors.Is(err, oauth.ErrNoGrant):
			if s.OAuth == nil {
				continue // a server that may need no sign-in: toolsift status tells
			}
			fmt.Fprintf(stdout, "%s  needs login: toolsift auth login %s\n", s.Name, s.Name)
		case err != nil:
			fmt.Fprintf(stdout, "%s  needs login (%s): toolsift auth login %s\n", s.Name, terminal.Escape(err.Error()), s.Name)
		case !g.SignedIn():
			fmt.Fprintf(stdout, "%s  needs login (%s): toolsift auth login %s\n", s.Name, terminal.Escape(g.Refused), s.Name)
		default:
			fmt.Fprintf(stdout, "%s  signed in with %s%s\n", s.Name, terminal.Escape(g.Issuer), expiry(g, now))
		}
		shown++
	}
	stored, err := tokens.Store.List(ctx)
	if err != nil {
		return err
	}
	keys := slices.Sorted(maps.Keys(stored))
	for _, key := range keys {
		if inUse(cfg, key) {
			continue
		}
		g := stored[key]
		fmt.Fprintf(stdout, "%s  stored sign-in for %s that no server in %s uses: toolsift auth logout %s\n",
			terminal.Escape(g.Server), terminal.Escape(g.URL), cfg.File, terminal.Escape(g.Server))
		shown++
	}
	if shown == 0 {
		fmt.Fprintln(stdout, "No server has signed in, and none has an oauth block. toolsift status shows which servers need a sign-in.")
	}
	return nil
}

// expiry says when a grant's access token expires, and whether it is refreshed then.
func expiry(g *oauth.Grant, now time.Time) string {
	var s string
	if !g.Expiry.IsZero() {
		if g.Expiry.After(now) {
			s = fmt.Sprintf(", the token expires %s (in %v)", g.Expiry.Local().Format("2006-01-02 15:04"), g.Expiry.Sub(now).Round(time.Second))
		} else {
			s = ", the token has expired"
		}
	}
	if g.RefreshToken != "" {
		s += " and is refreshed"
	}
	return s
}

// openBrowser opens url as xdg-open would: with each command of $BROWSER in turn (a
// command may say where the address goes with %s), else the system's opener. The browser
// is left running: it is the user's, and may outlive toolsift.
func openBrowser(url string) error {
	// Defence in depth behind discovery's check: an OS opener runs whatever a scheme is
	// registered to (file:, smb:, a custom one), so only a web address is handed to it.
	if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") {
		return fmt.Errorf("not opening %q in a browser: only http(s) addresses are", url)
	}
	return launchBrowser(url)
}

// launchBrowser hands target, a web address or the path of a page toolsift wrote, to the
// browser openBrowser would use.
func launchBrowser(url string) error {
	var commands [][]string
	if b := os.Getenv("BROWSER"); b != "" {
		for _, c := range strings.Split(b, string(os.PathListSeparator)) {
			fields := strings.Fields(c)
			if len(fields) == 0 {
				continue
			}
			placed := false
			for i, f := range fields {
				if strings.Contains(f, "%s") {
					fields[i], placed = strings.ReplaceAll(f, "%s", url), true
				}
			}
			if !placed {
				fields = append(fields, url)
			}
			commands = append(commands, fields)
		}
	} else {
		switch runtime.GOOS {
		case "darwin":
			commands = [][]string{{"open", url}}
		case "windows":
			commands = [][]string{{"rundll32", "url.dll,FileProtocolHandler", url}}
		default:
			commands = [][]string{{"xdg-open", url}}
		}
	}
	var errs []error
	for _, c := range commands {
		cmd := exec.Command(c[0], c[1:]...)
		if err := cmd.Start(); err != nil {
			errs = append(errs, err)
			continue
		}
		_ = cmd.Process.Release()
		return nil
	}
	return errors.Join(errs...)
}
