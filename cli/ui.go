package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/dashboard"
	"github.com/toolsift/toolsift/internal/dirs"
	"github.com/toolsift/toolsift/internal/redact"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/pin"
	"github.com/toolsift/toolsift/upstream"
)

const uiUsage = `Usage: toolsift ui [--config FILE] [--no-browser] [--listen 127.0.0.1:0]

Serves the dashboard on this machine's loopback interface and opens it in the browser:
your servers and their state, the live feed of searches, the tokens saved per day, and the
likely misses, each with a button that adds its words to the tool the model used in the
end. It starts your servers, as toolsift status does, to show their state. The address
carries a token good once; --no-browser prints it instead of opening it. Stop with Ctrl-C.
`

func init() {
	register(command{
		name: "ui", synopsis: "[--config FILE] [--no-browser]",
		summary: "open the dashboard: servers, live searches, tokens saved, misses to fix",
		help:    uiUsage, run: noStdin(uiCmd),
	})
}

func uiCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	configFile := fs.String("config", "", "")
	noBrowser := fs.Bool("no-browser", false, "")
	listen := fs.String("listen", "127.0.0.1:0", "")
	rest, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w: unexpected argument %q; ui takes only flags", errUsage, rest[0])
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("%w: --listen %q: want a loopback address such as 127.0.0.1:0 (a team's service serves /ui behind its own authentication)", errUsage, *listen)
	}
	cfg, err := loadConfig(*configFile, warnTo(stderr))
	if err != nil {
		return err
	}
	store, err := statsStore()
	if err != nil {
		return err
	}
	red := redact.New(cfg.Secrets()...)
	log := slog.New(redact.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}), red))
	// Started like status starts them: the page shows whether each works.
	for i := range cfg.Servers {
		cfg.Servers[i].LazyStart = false
	}
	pins, pinned, closePins, err := openPins(ctx, cfg, nil, log)
	if err != nil {
		return err
	}
	defer closePins()
	pool := upstream.NewPool(cfg.Servers, upstream.Options{Logger: log, Version: buildVersion(), CacheDir: cacheDir(), Tokens: tokens(), Pins: pins})
	defer pool.Close()
	pool.Start(upstream.Hooks{})

	var signIns sync.WaitGroup // sign-ins started from the page; waited for before the pool closes
	defer signIns.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	clients := openHabits(log)
	src := dashboard.Source{Store: store, Logger: log,
		Servers: func(context.Context) []dashboard.Server { return dashboardServers(pool.Statuses(), red) },
		Keywords: func(ctx context.Context, server, tool string, words []string) error {
			return editConfig(ctx, cfg.File, func(old []byte) ([]byte, error) { return config.AddKeywords(old, server, tool, words) })
		},
		Held: func(ctx context.Context) []dashboard.Held {
			return heldTools(ctx, pinned, cfg, func(pin.Key) bool { return true }, log)
		},
		Clients: func() []dashboard.Client {
			if clients == nil {
				return nil
			}
			return dashboardClients(clients.All())
		},
		Review: func(ctx context.Context, key pin.Key, digest string, approve bool) error {
			return settle(ctx, pinned, []pin.Key{key}, []string{digest}, approve)
		},
		SignIn: func(_ context.Context, server string) error {
			srv, err := remoteServer(cfg, server)
			if err != nil {
				return err
			}
			state, err := dirs.State()
			if err != nil {
				return err
			}
			login := &oauth.Login{Tokens: oauth.NewTokens(state), Server: srv, ConfigFile: cfg.File, Out: stderr, Timeout: 5 * time.Minute, Open: openBrowser}
			signIns.Add(1)
			go func() {
				defer signIns.Done()
				if _, err := login.Run(ctx); err != nil && !errors.Is(err, oauth.ErrNotAsked) {
					log.Warn("sign-in not finished", "upstream", server, "error", err)
				}
			}()
			return nil
		},
	}
	guard := dashboard.NewLoopback(dashboard.New(src))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	srv := &http.Server{Handler: guard, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String() + guard.Path()
	opened := false
	if !*noBrowser {
		page, err := redirectPage(url)
		if err == nil {
			defer os.Remove(page)
			opened = launchBrowser(page) == nil
		}
	}
	if opened {
		fmt.Fprintf(stdout, "Dashboard opened in your browser (%s). Stop with Ctrl-C.\n", ln.Addr())
	} else {
		fmt.Fprintf(stdout, "Dashboard: %s\n(good for one visit; stop with Ctrl-C)\n", url)
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("dashboard: %w", err)
	}
	sctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_ = srv.Shutdown(sctx)
	return nil
}

// redirectPage writes a page that sends the browser to url, readable by the user alone, and
// returns its path: the browser is given the page rather than the address, which carries
// the token, since every local user can read a process's arguments.
func redirectPage(url string) (string, error) {
	dir, err := dirs.State()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "ui-*.html")
	if err != nil {
		return "", err
	}
	page := `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=` + html.EscapeString(url) +
		`"><title>toolsift</title><a href="` + html.EscapeString(url) + `">Open the dashboard</a>` + "\n"
	_, err = f.WriteString(page)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// dashboardServers is the servers as the dashboard shows them, errors masked, each with
// its fix.
func dashboardServers(statuses []upstream.Status, red *redact.Redactor) []dashboard.Server {
	out := make([]dashboard.Server, 0, len(statuses))
	for _, st := range statuses {
		s := dashboard.Server{Name: st.Name, State: string(st.State), Tools: st.Tools}
		s.LastError = red.String(lastError(st)) // with the line of its output that names it
		switch st.State {
		case upstream.StateNeedsLogin:
			s.SignIn = true
			s.Fix = "Sign in: toolsift auth login " + st.Name
		case upstream.StateFailed:
			s.Fix = "Check its command or URL in the configuration; toolsift status --verbose shows its last lines"
		case upstream.StateStarting:
			s.Fix = "Starting (a first npx start downloads the server)"
		case upstream.StateDisabled:
			s.Fix = "Disabled in the configuration"
		}
		out = append(out, s)
	}
	return out
}
