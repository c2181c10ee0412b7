package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/dashboard"
	"github.com/toolsift/toolsift/embedding"
	"github.com/toolsift/toolsift/gate"
	"github.com/toolsift/toolsift/habit"
	"github.com/toolsift/toolsift/internal/audit"
	"github.com/toolsift/toolsift/internal/dirs"
	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/internal/logbuf"
	"github.com/toolsift/toolsift/internal/parent"
	"github.com/toolsift/toolsift/internal/redact"
	"github.com/toolsift/toolsift/internal/terminal"
	"github.com/toolsift/toolsift/pin"
	"github.com/toolsift/toolsift/proxy"
	"github.com/toolsift/toolsift/signin"
	"github.com/toolsift/toolsift/state"
	"github.com/toolsift/toolsift/stats"
	"github.com/toolsift/toolsift/telemetry"
	"github.com/toolsift/toolsift/upstream"
)

func init() {
	register(command{
		name: "serve", synopsis: "[--config FILE] [--listen ADDR] [--log-level LEVEL]",
		summary: "serve MCP on stdio, as a client starts it (the default command), or streamable HTTP with --listen",
		run:     serve,
	})
}

func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	configFile := fs.String("config", "", "configuration `FILE` (YAML or JSON)")
	level := fs.String("log-level", "info", "log `LEVEL`: debug, info, warn or error")
	listen := fs.String("listen", "", "serve streamable HTTP at `ADDR` (/mcp, and SSE at /sse) instead of stdio; :PORT binds 127.0.0.1")
	logFile := fs.String("log-file", "", "append logs to `FILE` instead of stderr (clients often hide a server's stderr)")
	rest, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("%w: unexpected argument %q; serve takes only flags (run 'toolsift help' for the other commands)", errUsage, rest[0])
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("%w: --log-level %q: want debug, info, warn or error", errUsage, *level)
	}
	// Logs go to stderr or a file, never stdout: in stdio mode it carries nothing but JSON-RPC.
	logTo := stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("--log-file: %w", err)
		}
		defer func() {
			// mcp-go logs through the default logger, which must not outlive the file.
			slog.SetDefault(slog.New(slog.NewTextHandler(stderr, nil)))
			f.Close()
		}()
		logTo = f
	}
	// Written from a goroutine of its own: a request never waits on the log's reader.
	lines := logbuf.New(logTo, 1<<20)
	defer lines.Close() // after everything deferred below has logged
	logTo = lines
	// Every log line passes the redactor, which learns the config's secrets once it is read.
	red := redact.New()
	log := slog.New(redact.Handler(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: lvl}), red))
	slog.SetDefault(log) // mcp-go's transports log through the default logger

	cfg, cfgErr := loadConfig(*configFile, func(msg string) { log.Warn(msg) })
	broken := ""
	switch err := cfgErr; {
	case err != nil && *listen != "":
		return err
	case err != nil:
		// A client shows a server that exits as "connection closed", and the reason only in
		// a log: serve instead, run nothing, and say it in every answer (see
		// proxy.Options.ConfigError).
		log.Error("configuration not read: serving no server until it is fixed", "error", err)
		broken = terminal.Lines(err.Error())
		cfg = &config.Config{}
	}
	red.Add(cfg.Secrets()...)
	addr := cmp.Or(*listen, cfg.HTTP.Listen)
	var auditLog *audit.Log
	if a := cfg.Audit; a.File != "" {
		if a.File == "-" && addr == "" {
			return fmt.Errorf("%s: audit.file is - (stdout), which carries MCP itself over stdio: write a path, or serve with --listen", cfg.File)
		}
		if auditLog, err = audit.Open(a.File, a.Arguments); err != nil {
			return fmt.Errorf("%s: audit.file: %w", cfg.File, err)
		}
		defer auditLog.Close()
	}
	// The proxy is built on the pool, then the pool starts reporting to it.
	// Replicas share their sessions through Redis; without it, nothing is shared.
	var shared *state.Redis
	if url := cfg.State.RedisURL; addr != "" && url != "" {
		if shared, err = state.Open(ctx, url, cmp.Or(cfg.HTTP.SessionIdleTimeout, 30*time.Minute)); err != nil {
			return fmt.Errorf("%s: %w", cfg.File, err)
		}
		defer shared.Close()
		if err := shared.Healthy(ctx); err != nil {
			log.Warn("shared state not reachable: serving this replica's sessions from memory until it is", "error", err)
		}
	}
	// A team's service (people sign in at its identity provider) signs each of them in to
	// the OAuth servers for themselves.
	team := addr != "" && cfg.HTTP.OIDC != nil
	toks := tokens()
	var pending signin.Pending // sign-ins under way: in memory without shared state
	if shared != nil && team && toks != nil {
		// Every replica acts as each person with the same grant: kept in Redis, sealed.
		key, err := state.ParseKey(os.Getenv(state.KeyEnv))
		if err != nil {
			return fmt.Errorf("%s: state.redis with auth.oidc keeps people's sign-ins in Redis, sealed: %w", cfg.File, err)
		}
		grants, err := shared.Grants(key)
		if err != nil {
			return err
		}
		toks.Store, toks.Lock = grants, shared.Lock
		pending = grants.Pending()
	}
	pins, pinned, closePins, err := openPins(ctx, cfg, shared, log)
	if err != nil {
		return err
	}
	defer closePins()
	pool := upstream.NewPool(cfg.Servers, upstream.Options{Logger: log, Version: buildVersion(), CacheDir: cacheDir(), Tokens: toks, PerUser: team, Pins: pins})
	defer pool.Close()
	emb := newEmbeddings(cfg, log, false)
	if emb != nil {
		// Closed before the pool: a catalog change after it is ignored.
		defer emb.Close()
	}
	var pages *signin.Pages
	if o := cfg.HTTP.OIDC; team && o.ClientID != "" && toks != nil {
		pages = &signin.Pages{Tokens: toks, PublicURL: cfg.HTTP.PublicURL, ConfigFile: cfg.File, Logger: log.With("component", "sign-in"),
			Identity: signin.Identity{Issuer: o.Issuer, ClientID: o.ClientID, ClientSecret: o.ClientSecret}, Servers: map[string]config.Server{},
			Pending: pending}
		for _, s := range cfg.Servers {
			pages.Servers[s.Name] = s
		}
	}
	if cfg.Tracing.OTLPEndpoint != "" {
		shutdown, err := telemetry.StartTracing(ctx, cfg.Tracing.OTLPEndpoint, buildVersion())
		if err != nil {
			return fmt.Errorf("%s: %w", cfg.File, err)
		}
		log.Info("sending traces", "endpoint", cfg.Tracing.OTLPEndpoint)
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = shutdown(sctx) // the spans left are sent, or given up on
		}()
	}
	var metrics *telemetry.Metrics
	if addr != "" {
		metrics = telemetry.NewMetrics(pool.Statuses)
	}
	// Counted per process, kept in the state folder every toolsift process of the user
	// writes to; closed after the proxy, which records into it.
	counts := openStats(log)
	defer counts.Close()
	var signIn proxy.SignIn
	if pages != nil {
		signIn = pages
	}
	var habits proxy.Habits // nil, not a nil *habit.File, when none is kept
	if f := openHabits(log); f != nil {
		habits = f
	}
	srv := proxy.New(pool, proxy.Options{Logger: log, Version: buildVersion(), MaxCalls: cfg.MaxCalls,
		MaxUnlocked: cfg.MaxUnlocked, ListAllUnder: cfg.ListAllUnder, Groups: cfg.Groups, Embeddings: emb,
		Sampling: cfg.Search.Sampling == config.SamplingAuto, Redactor: red, ConfigError: broken, Audit: auditLog, SignIn: signIn, Metrics: metrics,
		Sessions: sessionStore(shared), Relay: relay(shared), SessionIdleTimeout: cfg.HTTP.SessionIdleTimeout,
		Stats: counts, Savings: cfg.Search.SavingsLine, Habits: habits})
	defer srv.Close() // waits for an index build in progress; runs before the pool closes
	pool.Start(upstream.Hooks{Client: srv, OnChange: srv.CatalogChanged})
	if addr != "" {
		var handler http.Handler
		if pages != nil {
			pages.SignedIn = func(user, server, id string) {
				// The server's tools may be known only once someone has signed in.
				if err := pool.Learn(ctx, identity.User{Kind: identity.Person, Key: user}, server); err != nil {
					log.Warn("upstream not reached after a sign-in", "upstream", server, "error", err)
				}
				srv.SignedIn(id)
			}
			handler = pages
		}
		return serveHTTP(ctx, srv, cfg, addr, handler, metrics, shared, pinned, pool.Catalog, log)
	}
	log.Info("serving on stdio", "config", cfg.File, "servers", len(cfg.Servers))
	if isTerminal(stdin) {
		fmt.Fprintln(stderr, "toolsift speaks MCP on stdin and stdout, for an MCP client to start; press Ctrl-D to stop. To check your servers, run: toolsift status")
	}
	// A client killed while something else holds toolsift's stdin (a launcher killed under
	// its client) never closes it: toolsift stops with the process that started it instead.
	// Only on stdio: a server on --listen outlives the shell that started it.
	ctx, unwatch := parent.Watch(ctx, log)
	defer unwatch()
	if err := srv.ServeStdio(ctx, stdin, stdout); err != nil {
		return err
	}
	if broken != "" {
		return cfgErr // served, as it was broken: the exit status says so
	}
	return nil
}

// openHabits is where the clients' habits are kept (habits.json in the state folder), or
// nil when there is no state folder: each session then learns for itself.
func openHabits(log *slog.Logger) *habit.File {
	dir, err := dirs.State()
	if err != nil {
		log.Warn("clients' habits not kept: no state folder", "error", err)
		return nil
	}
	return habit.Open(filepath.Join(dir, "habits.json"), log, nil)
}

// openStats starts counting into the state folder's stats, or, when there is no state
// folder, counting for the savings line alone.
func openStats(log *slog.Logger) *stats.Recorder {
	var store *stats.Store
	if dir, err := dirs.State(); err != nil {
		log.Warn("stats not kept: no state folder", "error", err)
	} else if store, err = stats.Open(dir); err != nil {
		log.Warn("stats not kept", "error", err)
	}
	return stats.NewRecorder(store, stats.RecorderOptions{Logger: log})
}

// serveHTTP serves until ctx ends, then stops accepting, lets requests in flight finish (up
// to 10s) and returns; the caller then closes the upstreams.
func serveHTTP(ctx context.Context, srv *proxy.Server, full *config.Config, addr string, pages http.Handler, metrics *telemetry.Metrics, shared *state.Redis, pinned pin.Store, catalog func() *upstream.Catalog, log *slog.Logger) error {
	var ui http.Handler
	if store, err := statsStore(); err == nil {
		ui = dashboard.New(dashboard.Source{Store: store, Logger: log,
			Servers: func(ctx context.Context) []dashboard.Server {
				// As tool_search's directory shows them: those the caller's access admits.
				u := identity.FromContext(ctx)
				sts := slices.DeleteFunc(srv.Statuses(), func(st upstream.Status) bool { return !st.Admits(u) })
				return dashboardServers(sts, nil)
			},
			Keywords: func(ctx context.Context, server, tool string, words []string) error {
				return editConfig(ctx, full.File, func(old []byte) ([]byte, error) { return config.AddKeywords(old, server, tool, words) })
			},
			// Shown to those who may use the server; approving a tool for everyone is the
			// operator's, on the host: toolsift review.
			Held: func(ctx context.Context) []dashboard.Held {
				// Those of the tools held now that the caller's access admits: a person sees
				// no definition of a tool they may not use.
				u := identity.FromContext(ctx)
				sts := srv.Statuses()
				held := catalog().Held
				return heldTools(ctx, pinned, full, func(k pin.Key) bool {
					return slices.ContainsFunc(held, func(h upstream.Held) bool {
						return h.Server == k.Server && h.Name == k.Tool && h.Admits(u)
					}) && slices.ContainsFunc(sts, func(st upstream.Status) bool { return st.Name == k.Server && st.Admits(u) })
				}, log)
			}})
	}
	cfg := full.HTTP
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: --listen %q: want HOST:PORT or :PORT", errUsage, addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	named := namedTokens()
	authed := len(cfg.Tokens) > 0 || named != nil && named.InUse() || cfg.OIDC != nil
	if !gate.IsLoopback(host) && !authed {
		return fmt.Errorf("refusing to listen on %s without auth.tokens, auth.oidc or a named token: anyone who can reach it could use every configured server; make one with toolsift token create NAME (or set auth.oidc or auth.tokens in the config), or listen on 127.0.0.1", net.JoinHostPort(host, port))
	}
	var oidc *gate.OIDC
	if o := cfg.OIDC; o != nil {
		oidc = &gate.OIDC{Issuer: o.Issuer, Resource: cfg.PublicURL + "/mcp", Audience: o.Audience,
			UserClaim: o.UserClaim, GroupsClaim: o.GroupsClaim, Scopes: o.Scopes, Algorithms: o.Algorithms}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return err
	}
	log.Info("serving on http", "url", "http://"+ln.Addr().String()+"/mcp", "auth", authed)
	err = gate.Serve(ctx, ln, srv, gate.Options{Logger: log, MaxCalls: full.MaxCalls,
		Metrics: metrics.Handler(), MetricsPublic: full.Metrics.Public, Shared: gateShared(shared),
		Tokens: cfg.Tokens, Named: named, OIDC: oidc, Pages: pages, AllowedOrigins: cfg.AllowedOrigins, SessionIdleTimeout: cfg.SessionIdleTimeout,
		ReadTimeout: cfg.ReadTimeout, MaxConnections: cfg.MaxConnections,
		MaxSessions: cfg.MaxSessions, MaxSessionsPerToken: cfg.MaxSessionsPerToken, UI: ui,
	})
	log.Info("shut down")
	return err
}

// newEmbeddings starts the embeddings engine of cfg's search.embeddings, with tool vectors
// cached beside the catalogs; nil when none is configured. measuring is for the commands
// that measure a ranking (see embedding.Options.AlwaysAsk).
func newEmbeddings(cfg *config.Config, log *slog.Logger, measuring bool) *embedding.Engine {
	e := cfg.Search.Embeddings
	if e.URL == "" {
		return nil
	}
	log = log.With("component", "embeddings")
	log.Info("ranking by meaning too", "url", e.URL, "model", e.Model, "timeout", e.Timeout)
	return embedding.New(embedding.Options{URL: e.URL, Model: e.Model, APIKey: e.APIKey, Timeout: e.Timeout,
		CacheDir: cacheDir(), Logger: log, AlwaysAsk: measuring})
}

// cacheDir is where server catalogs are cached: $XDG_CACHE_HOME/toolsift, or the
// platform's user cache directory; empty (no cache) if there is none.
func cacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "toolsift")
}

// sessionStore, relay and gateShared give the proxy and the gate the shared state, or nil (not a
// typed nil) without one.
func sessionStore(r *state.Redis) proxy.SessionStore {
	if r == nil {
		return nil
	}
	return r
}

func relay(r *state.Redis) proxy.Relay {
	if r == nil {
		return nil
	}
	return r
}

func gateShared(r *state.Redis) gate.Shared {
	if r == nil {
		return nil
	}
	return r
}
