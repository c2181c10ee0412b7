package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/clients"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/dirs"
)

const setupUsage = `Usage: toolsift setup CLIENT [--config FILE] [--file CLIENTFILE] [--undo] [--dry-run]
                      [--force] [--command PATH]

Switches a client to toolsift: the servers toolsift import takes from the client's
configuration are replaced by one entry that starts toolsift with your configuration;
everything else in the file is kept as it was. The file is first copied to toolsift's
state folder ($XDG_STATE_HOME/toolsift/setup, else ~/.local/state/toolsift/setup: never
beside the file, which may be in a repository), with a record of every server moved, on
every run; then it is rewritten atomically with its permissions kept, unless it changed
meanwhile. --undo puts the servers back (those moved by later runs too) and removes the
backup.

CLIENT is claude-code, claude-desktop, cursor, vscode, gemini, codex, opencode or copilot.
The file changed is the client's user-level one: ~/.claude.json (its user servers, and the
local servers of the project you are in), claude_desktop_config.json, ~/.cursor/mcp.json,
VS Code's user mcp.json (or, if there is none, ./.vscode/mcp.json),
~/.gemini/settings.json, ~/.codex/config.toml, ~/.config/opencode/opencode.json,
~/.copilot/mcp-config.json (or $COPILOT_HOME's). --file picks another, such as a
project's .mcp.json. --dry-run shows which.

Flags:
  --config FILE   the toolsift configuration the client starts toolsift with; it must hold
                  the servers being moved (default: ./toolsift.yaml, then
                  $XDG_CONFIG_HOME/toolsift/config.yaml)
  --file FILE     the client configuration to change
  --undo          switch back
  --dry-run       show what would change, write nothing
  --force         switch even if servers being moved are not in the toolsift
                  configuration (setup's record keeps them; --undo puts them back)
  --command PATH  the toolsift the client runs (default: this toolsift, by the path on
                  your PATH that leads to it, else by its own absolute path: clients
                  started from a desktop do not see your shell's PATH)

Typically: toolsift import -o ~/.config/toolsift/config.yaml
           toolsift setup claude-code
`

func init() {
	register(command{
		name: "setup", summary: "point a client at toolsift in place of its servers, keeping a backup; --undo switches back",
		help: setupUsage, run: noStdin(setupCmd),
	})
}

// setupRun is one setup: its flags, checked, and where things are.
type setupRun struct {
	kind                 clients.Kind
	configFlag, fileFlag string // --config, --file as given
	undo, dryRun, force  bool
	command              string // --command
	file                 string // the client's configuration file
	opts                 clients.Options
	show                 func(string) string
}

// setupCmd switches a client to toolsift, or back:
// toolsift setup CLIENT [--config FILE] [--file CLIENTFILE] [--undo] [--dry-run].
func setupCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	r, done, err := parseSetup(args, stdout)
	if done || err != nil {
		return err
	}
	// Claude Code's projects are switched too, unless one file was named.
	projects := r.kind == clients.ClaudeCode && r.fileFlag == ""
	if r.undo {
		err := undoSetup(r.kind, r.file, r.opts, r.dryRun, stdout, r.show)
		if projects && errors.Is(err, clients.ErrNothingToUndo) {
			// The projects' handovers may still be there to undo.
			fmt.Fprintf(stdout, "%s: %s: %v\n", r.kind, r.show(r.file), err)
			err = nil
		}
		if err != nil || !projects {
			return err
		}
		return undoProjects(r.opts, r.dryRun, stdout, r.show)
	}
	cfgFile, unset, err := r.config(stderr)
	if err != nil {
		return err
	}
	entry, err := r.entry(cfgFile)
	if err != nil {
		return err
	}
	// A client may write its file while setup does (Claude Code keeps its state in
	// ~/.claude.json): Apply then writes nothing, and setup starts over from the new file.
	for attempt := 1; ; attempt++ {
		ch, missing, err := r.plan(entry, cfgFile, unset.cfg)
		if err != nil {
			return err
		}
		if !ch.Changed() && !r.dryRun {
			fmt.Fprintf(stdout, "%s: %s\nAlready switched: nothing to change.\n", r.kind, r.show(r.file))
			if projects {
				return setupProjects(unset.cfg, r.opts.Dir, r.opts, false, stdout, r.show)
			}
			return nil
		}
		if !r.dryRun {
			err = ch.Apply()
			if errors.Is(err, clients.ErrChanged) && attempt < 3 {
				fmt.Fprintf(stderr, "toolsift: %s changed while setup was writing it; starting over\n", r.show(r.file))
				continue
			}
			if err != nil {
				return err
			}
		}
		reportSetup(stdout, ch, setupReport{kind: r.kind, file: r.file, cfgFile: cfgFile, entry: entry, missing: missing,
			unset: unset.vars, dryRun: r.dryRun, fileFlag: fileFlag(r.fileFlag, r.file, r.show), show: r.show,
			others: otherFiles(r.kind, r.file, r.opts.Home, r.opts.Dir, r.opts, projects)})
		if projects {
			return setupProjects(unset.cfg, r.opts.Dir, r.opts, r.dryRun, stdout, r.show)
		}
		return nil
	}
}

// parseSetup reads setup's flags and finds the client's file.
func parseSetup(args []string, stdout io.Writer) (r setupRun, done bool, err error) {
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	fs.StringVar(&r.configFlag, "config", "", "")
	fs.StringVar(&r.fileFlag, "file", "", "")
	fs.BoolVar(&r.undo, "undo", false, "")
	fs.BoolVar(&r.dryRun, "dry-run", false, "")
	fs.BoolVar(&r.force, "force", false, "")
	fs.StringVar(&r.command, "command", "", "")
	pos, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return r, done, err
	}
	if len(pos) != 1 {
		return r, true, fmt.Errorf("%w: name one client: toolsift setup CLIENT, where CLIENT is one of %s", errUsage, kindNames())
	}
	if r.kind, err = clients.ParseKind(pos[0]); err != nil {
		return r, true, fmt.Errorf("%w: %v", errUsage, err)
	}
	home, cwd := userDirs()
	state, err := dirs.State()
	if err != nil {
		return r, true, fmt.Errorf("no folder to keep the backup in: %w", err)
	}
	r.opts = clients.Options{Home: home, Dir: cwd, State: state}
	r.show = func(p string) string { return showPath(p, home) }
	switch r.file = r.fileFlag; {
	case r.file == "" && home == "":
		return r, true, fmt.Errorf("%w: no home directory to find %s's configuration in: pass --file CLIENTFILE", errUsage, r.kind.Title())
	case r.file == "":
		r.file = clients.DefaultFile(r.kind, home, cwd)
	default:
		if r.file, err = filepath.Abs(r.file); err != nil {
			return r, true, err
		}
	}
	return r, false, nil
}

// config finds the configuration the client is to start toolsift with, and checks that it
// would start.
func (r setupRun) config(stderr io.Writer) (string, checkedConfig, error) {
	cfgFile, err := findConfig(r.configFlag, warnTo(stderr))
	if err != nil {
		return "", checkedConfig{}, err // it says how to make one
	}
	if cfgFile, err = filepath.Abs(cfgFile); err != nil {
		return "", checkedConfig{}, err
	}
	if _, err := os.Stat(cfgFile); err != nil {
		return "", checkedConfig{}, fmt.Errorf("--config %s: %w: make it from your clients' servers with toolsift import -o %s", r.show(cfgFile), err, r.show(cfgFile))
	}
	unset, err := checkConfig(cfgFile)
	if err != nil {
		return "", checkedConfig{}, fmt.Errorf("the client could not start toolsift with this configuration: fix it, then run setup again: %w", err)
	}
	return cfgFile, unset, nil
}

// entry is the client's entry that starts toolsift with cfgFile.
func (r setupRun) entry(cfgFile string) (clients.Entry, error) {
	if r.command != "" {
		return clients.Entry{Command: r.command, Args: []string{"--config", cfgFile}}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return clients.Entry{}, fmt.Errorf("finding toolsift's own path: %w; pass --command PATH", err)
	}
	return startEntry(exe, runtime.GOOS, buildVersion(), cfgFile, exec.LookPath)
}

// plan plans the switch, and refuses one that would take servers out of the client that
// the configuration lacks (unless --force).
func (r setupRun) plan(entry clients.Entry, cfgFile string, cfg *config.Config) (*clients.Change, []string, error) {
	ch, err := clients.PlanSetup(r.file, r.kind, entry, r.opts)
	if errors.Is(err, clients.ErrStaleBackup) {
		return nil, nil, fmt.Errorf("%w: to restore it run toolsift setup %s --undo --file %s", err, r.kind, r.file)
	}
	if err != nil {
		return nil, nil, err
	}
	var missing []string
	for _, s := range ch.Moved {
		// A project's server is served from that project's servers (see Render).
		served := cfg.Servers
		if dir := s.ProjectDir(); dir != "" {
			served = cfg.Projects[filepath.Clean(dir)]
		}
		if !slices.ContainsFunc(served, func(c config.Server) bool { return c.Name == s.Name }) {
			missing = append(missing, s.Name)
		}
	}
	if len(missing) > 0 && !r.force {
		return nil, nil, fmt.Errorf("%s has servers that are not in %s: %s; setup would take them out of %s: add them first (toolsift import --client %s %s, and merge its output into %s), or pass --force (setup keeps them, and --undo puts them back)",
			r.show(r.file), r.show(cfgFile), strings.Join(missing, ", "), r.kind.Title(), r.kind, r.show(r.file), r.show(cfgFile))
	}
	return ch, missing, nil
}

type setupReport struct {
	kind          clients.Kind
	file, cfgFile string
	entry         clients.Entry
	missing       []string // servers moved that the configuration lacks
	unset         []string // variables the configuration needs that are not set here
	dryRun        bool
	fileFlag      string
	show          func(string) string
	others        []otherFile
}

// reportSetup says what setup did, or would do.
func reportSetup(stdout io.Writer, ch *clients.Change, r setupReport) {
	show := r.show
	verb := map[bool]string{true: "would be ", false: ""}[r.dryRun]
	fmt.Fprintf(stdout, "%s: %s\n", r.kind, show(r.file))
	if len(ch.Moved) > 0 {
		fmt.Fprintf(stdout, "  %smoved to toolsift: %s\n", verb, show(strings.Join(serverNames(ch.Moved), ", ")))
	}
	for _, k := range ch.Kept {
		fmt.Fprintf(stdout, "  kept in %s, toolsift could not import it: %s\n", r.kind.Title(), keptReason(k, ch.Warnings))
	}
	fmt.Fprintf(stdout, "  toolsift entry: %s %s\n", r.entry.Command, strings.Join(r.entry.Args, " "))
	if len(ch.Old) > 0 {
		fmt.Fprintf(stdout, "  backup: %s\n", show(ch.Backup))
	}
	for _, n := range ch.Notes {
		fmt.Fprintf(stdout, "  note: %s\n", show(n))
	}
	if len(r.missing) > 0 {
		fmt.Fprintf(stdout, "  note: not in %s: %s; setup keeps them with the backup, and setup %s --undo puts them back\n", show(r.cfgFile), strings.Join(r.missing, ", "), r.kind)
	}
	if len(r.unset) > 0 {
		fmt.Fprintf(stdout, "  note: not set in this shell: %s; the servers that use them do not start unless they are set where %s runs (or given a default: ${VAR:-value})\n",
			strings.Join(r.unset, ", "), r.kind.Title())
	}
	for _, other := range r.others {
		fmt.Fprintf(stdout, "  note: %s has %s of its own, which %s loads beside toolsift there (it has no setting to turn them off for you alone); toolsift serves them in that project once they are in %s (toolsift import -o %s --merge): take them out of that file to load them once\n",
			show(other.path), plural(other.servers, "server"), r.kind.Title(), show(r.cfgFile), show(r.cfgFile))
	}
	if r.dryRun {
		fmt.Fprintf(stdout, "Dry run, nothing written. The servers would be:\n%s\n", strings.TrimRight(ch.Snippet, "\n"))
		return
	}
	fmt.Fprintf(stdout, "Done: restart %s to use toolsift. Undo with: toolsift setup %s --undo%s\n", r.kind.Title(), r.kind, r.fileFlag)
}

type checkedConfig struct {
	cfg *config.Config
	// vars are the variables the configuration needs that are not set here.
	vars []string
}

// checkConfig loads the configuration setup points the client at. What counts is the
// environment the client starts toolsift in, not this shell's, so a variable unset here
// does not fail the check; it is reported.
func checkConfig(file string) (checkedConfig, error) {
	data, err := config.Read(file)
	if err != nil {
		return checkedConfig{}, err
	}
	var c checkedConfig
	c.cfg, err = config.Parse(file, data, func(name string) (string, bool) {
		if v, ok := os.LookupEnv(name); ok {
			return v, true
		}
		// Without a default the variable would stop toolsift; with one, "" makes the
		// configuration use the default.
		if strings.Contains(string(data), "${"+name+"}") && !slices.Contains(c.vars, name) {
			c.vars = append(c.vars, name)
		}
		return "", true
	})
	return c, err
}

func undoSetup(kind clients.Kind, file string, opts clients.Options, dryRun bool, stdout io.Writer, show func(string) string) error {
	ch, err := clients.PlanUndo(file, kind, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s\n", kind, show(file))
	fmt.Fprintf(stdout, "  %s\n", show(ch.Snippet))
	for _, n := range ch.Notes {
		fmt.Fprintf(stdout, "  note: %s\n", n)
	}
	if dryRun {
		fmt.Fprintln(stdout, "Dry run, nothing written.")
		return nil
	}
	if err := ch.Apply(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Done: restart %s to use its own servers again.\n", kind.Title())
	return nil
}

type otherFile struct {
	path    string
	servers int
}

// otherFiles finds the client's other configuration files that still have servers, which
// the client loads beside toolsift's entry; but Claude Code's .mcp.json when setup hands its
// servers over itself (handover).
func otherFiles(kind clients.Kind, file, home, cwd string, opts clients.Options, handover bool) []otherFile {
	var out []otherFile
	for _, src := range clients.Find(home, cwd) {
		if src.Kind != kind || src.Path == file || handover && filepath.Base(src.Path) == ".mcp.json" {
			continue
		}
		imp, err := clients.Read(src.Path, src.Kind, opts)
		if err != nil || len(imp.Servers) == 0 {
			continue
		}
		out = append(out, otherFile{src.Path, len(imp.Servers)})
	}
	return out
}

func keptReason(key string, warnings []clients.Warning) string {
	for _, w := range warnings {
		if w.Server == key || strings.HasPrefix(w.Server, key+" (") {
			return key + " (" + w.Msg + ")"
		}
	}
	return key
}

func serverNames(servers []clients.Server) []string {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Name
		if s.Scope != "" {
			names[i] += " (" + s.Scope + ")"
		}
	}
	return names
}

func fileFlag(given, file string, show func(string) string) string {
	if given == "" {
		return ""
	}
	return " --file " + show(file)
}

// startEntry is how a client should start this toolsift with the configuration cfgFile.
// Run by npx (from npx's cache, which npm may clear), that is npx again, at this version,
// so that the entry lasts; on Windows through cmd /c, which clients need to run npx.cmd.
// Otherwise it is the executable (see toolsiftCommand).
func startEntry(exe, goos, version, cfgFile string, lookPath func(string) (string, error)) (clients.Entry, error) {
	if strings.Contains(strings.ReplaceAll(exe, `\`, "/"), "/_npx/") {
		pkg := "toolsift"
		if strings.HasPrefix(version, "v") {
			pkg += "@" + strings.TrimPrefix(version, "v")
		}
		args := []string{"-y", pkg, "--config", cfgFile}
		if goos == "windows" {
			return clients.Entry{Command: "cmd", Args: append([]string{"/c", "npx"}, args...)}, nil
		}
		return clients.Entry{Command: "npx", Args: args}, nil
	}
	cmd, err := toolsiftCommand(exe, lookPath)
	return clients.Entry{Command: cmd, Args: []string{"--config", cfgFile}}, err
}

// toolsiftCommand returns the command a client should start toolsift by, given this
// executable's path: the toolsift on PATH when it is this executable (a path such as
// /usr/local/bin/toolsift that stays right across upgrades), else the executable's own
// absolute path. Not a bare "toolsift": clients started from a desktop do not see the PATH
// of the user's shell. A binary built by go run is refused, as it is deleted on exit.
func toolsiftCommand(exe string, lookPath func(string) (string, error)) (string, error) {
	real := exe
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		real = r
	}
	if p, err := lookPath("toolsift"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			if r, err := filepath.EvalSymlinks(abs); err == nil && r == real {
				return abs, nil
			}
		}
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "", fmt.Errorf("%w: toolsift is running from a temporary build (%s, as go run makes): install it (go install . in the clone) and run setup with that, or pass --command PATH", errUsage, exe)
	}
	return exe, nil
}
