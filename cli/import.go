package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/clients"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/dirs"
)

const importUsage = `Usage: toolsift import [--client NAME] [FILE...] [-o FILE [--merge | --force]]

Reads the MCP servers your clients are configured with and prints a toolsift
configuration holding them. Without FILE it reads the client configurations there are
for you and for this directory, and says on stderr which: ~/.claude.json and ./.mcp.json
(Claude Code), claude_desktop_config.json, ~/.cursor/mcp.json and ./.cursor/mcp.json,
VS Code's user mcp.json and ./.vscode/mcp.json, ~/.gemini/settings.json and
./.gemini/settings.json, ~/.codex/config.toml, opencode.json, Copilot CLI's
~/.copilot/mcp-config.json (or $COPILOT_HOME's) and ./.github/mcp.json. A FILE's client is told
from its name and content. A file toolsift setup switched is read as it was before: the
servers setup moved to toolsift come from its record, with any added to the file since.

Flags:
  --client NAME  read only this client's files, or read each FILE as its format:
                 claude-code, claude-desktop, cursor, vscode, gemini, codex, opencode,
                 copilot
  -o FILE        write the configuration to FILE (mode 0600) instead of stdout
  --merge        with -o, add to FILE the servers it lacks, keeping the rest of it
  --force        with -o, overwrite FILE if it exists; refused if that would drop servers
                 FILE has (take them out first with toolsift remove NAME)

What cannot be carried over as it was — VS Code input prompts, env files, transports
toolsift does not speak, entries without command or url, a name used twice — is reported
on stderr and noted beside the server. toolsift's own entry is left out; disabled servers
are kept with disabled: true.

A project's servers (a repo's .mcp.json, .cursor/, .vscode/, .gemini/, .codex/,
opencode.json, .github/) come with disabled: true unless that client's own record
approves them: Claude Code's approvals, Gemini CLI's trusted folders, Codex's trusted
projects, Copilot CLI's trusted folders. Cursor, VS Code and opencode keep none toolsift
can read. Naming the file (toolsift import FILE) approves its servers.

Then switch a client over: toolsift setup CLIENT (see toolsift setup -h).
`

// userDirs returns the user's home directory and the working directory; either is empty if
// it cannot be told.
func userDirs() (home, cwd string) {
	home, _ = os.UserHomeDir()
	cwd, _ = os.Getwd()
	return home, cwd
}

func kindNames() string {
	names := make([]string, len(clients.Kinds))
	for i, k := range clients.Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

func init() {
	register(command{
		name: "import", summary: "write a toolsift config holding your clients' MCP servers (Claude, Cursor, VS Code, Gemini, Codex, opencode, Copilot)",
		help: importUsage, run: noStdin(importCmd),
	})
}

// importFlags are import's flags, checked.
type importFlags struct {
	kind         clients.Kind // --client
	out          string       // -o
	force, merge bool
	files        []string
}

// importCmd prints a toolsift configuration holding the servers of the user's MCP clients:
// toolsift import [--client NAME] [FILE...] [-o FILE] [--force].
func importCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, done, err := parseImportFlags(args, stdout)
	if done || err != nil {
		return err
	}
	home, cwd := userDirs()
	opts := clients.Options{Home: home, Dir: cwd}
	if state, err := dirs.State(); err == nil {
		opts.State = state
	}
	show := func(p string) string { return showPath(p, home) }
	imps, err := readClients(f, opts, show, stderr)
	if err != nil {
		return err
	}
	imp := clients.Merge(imps...)
	reportImport(imp, show, stderr)
	data, err := clients.Render(imp, home)
	if err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	if f.out == "" {
		_, err := stdout.Write(data)
		return err
	}
	return writeImport(ctx, f, data, len(imp.Servers), stderr)
}

func parseImportFlags(args []string, stdout io.Writer) (f importFlags, done bool, err error) {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	client := fs.String("client", "", "")
	fs.StringVar(&f.out, "o", "", "")
	fs.BoolVar(&f.force, "force", false, "")
	fs.BoolVar(&f.merge, "merge", false, "")
	if f.files, done, err = parseFlags(fs, args, stdout); done || err != nil {
		return f, done, err
	}
	if *client != "" {
		if f.kind, err = clients.ParseKind(*client); err != nil {
			return f, true, fmt.Errorf("%w: --client: %v", errUsage, err)
		}
	}
	if (f.merge || f.force) && f.out == "" {
		return f, true, fmt.Errorf("%w: --merge and --force go with -o FILE", errUsage)
	}
	if f.merge && f.force {
		return f, true, fmt.Errorf("%w: give --merge (add what FILE lacks) or --force (replace FILE), not both", errUsage)
	}
	if f.out != "" {
		_, err := os.Stat(f.out)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return f, true, err
		case !f.force && !f.merge:
			return f, true, fmt.Errorf("%w: %s exists: pass --merge to add the servers it lacks, --force to replace it, or choose another -o FILE", errUsage, f.out)
		}
	}
	return f, false, nil
}

// readClients reads the files named, or else every client configuration found (of the
// client asked for, if any).
func readClients(f importFlags, opts clients.Options, show func(string) string, stderr io.Writer) ([]clients.Import, error) {
	var imps []clients.Import
	if len(f.files) > 0 {
		for _, file := range f.files {
			abs, err := filepath.Abs(file)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			named := opts
			named.Named = true
			imp, _, err := clients.ReadBeforeSetup(abs, f.kind, named)
			if errors.Is(err, clients.ErrUnknownFormat) {
				return nil, fmt.Errorf("%w; if it is one, say which client's with --client NAME (%s)", err, kindNames())
			}
			if err != nil {
				return nil, err
			}
			imps = append(imps, imp)
		}
		return imps, nil
	}
	sources := clients.Find(opts.Home, opts.Dir)
	if f.kind != "" {
		sources = slices.DeleteFunc(sources, func(s clients.Source) bool { return s.Kind != f.kind })
	}
	if len(sources) == 0 {
		what := "no MCP client configuration"
		if f.kind != "" {
			what = "no " + f.kind.Title() + " configuration"
		}
		return nil, fmt.Errorf("%s found in %s or %s: name the files to read (toolsift import FILE...), see toolsift import -h", what, show(opts.Home), opts.Dir)
	}
	for _, src := range sources {
		imp, switched, err := clients.ReadBeforeSetup(src.Path, src.Kind, opts)
		if err != nil {
			// One broken file should not keep the others from being imported, but it must
			// not go unnoticed either.
			fmt.Fprintf(stderr, "toolsift: not read, its servers are not in the output: %v\n", err)
			continue
		}
		if switched {
			fmt.Fprintf(stderr, "toolsift: %s was switched to toolsift by setup: read as it was, with the servers setup moved\n", show(src.Path))
		}
		imps = append(imps, imp)
	}
	return imps, nil
}

// reportImport tells stderr what was read from each file, and what was not taken.
func reportImport(imp clients.Import, show func(string) string, stderr io.Writer) {
	for _, src := range imp.Sources {
		n := 0
		for _, s := range imp.Servers {
			if s.Source.Path == src.Path {
				n++
			}
		}
		fmt.Fprintf(stderr, "toolsift: read %s (%s): %s\n", show(src.Path), src.Kind, plural(n, "server"))
	}
	for _, w := range imp.Warnings {
		fmt.Fprintf(stderr, "toolsift: %s\n", show(w.String()))
	}
}

// writeImport writes the imported configuration, data, to -o: a new file, or merged into
// the one there (--merge), or in its place (--force) if that drops none of its servers.
func writeImport(ctx context.Context, f importFlags, data []byte, servers int, stderr io.Writer) error {
	wrote := servers
	var added []string
	merged := false
	// The file is read again under the edit's lock: what another process wrote since the
	// check of the flags is merged, or kept from being dropped, not overwritten.
	err := config.Edit(ctx, f.out, func(existing []byte) ([]byte, error) {
		switch {
		case f.merge && existing != nil:
			text, names, err := config.MergeServers(existing, data)
			if err != nil {
				return nil, fmt.Errorf("merging into %s: %w", f.out, err)
			}
			added, merged = names, true
			return text, nil
		case existing != nil && !f.force:
			return nil, fmt.Errorf("%w: %s exists: pass --merge to add the servers it lacks, --force to replace it, or choose another -o FILE", errUsage, f.out)
		case existing != nil:
			if lost := droppedServers(existing, data); len(lost) > 0 {
				return nil, fmt.Errorf("%s has %s that the import does not: %s; replacing it would drop them. Pass --merge to add what it lacks instead, or take them out first (toolsift remove NAME)",
					f.out, plural(len(lost), "server"), strings.Join(lost, ", "))
			}
		}
		// 0600 for a new file: literal values such as API keys are copied as they were.
		return data, nil
	})
	if err != nil {
		return err
	}
	if merged {
		wrote = len(added)
		if len(added) == 0 {
			fmt.Fprintf(stderr, "toolsift: %s already has every server imported: nothing to add\n", f.out)
			return nil
		}
		fmt.Fprintf(stderr, "toolsift: adding to %s: %s\n", f.out, strings.Join(added, ", "))
		for _, r := range takeRemoved(ctx, f.out, added) {
			fmt.Fprintf(stderr, "toolsift: %s is back: you took it out with toolsift remove on %s, and a client still lists it; to keep it out, remove it from that client too, or write disabled: true under it\n",
				r.Name, r.At.Format("2006-01-02 15:04"))
		}
	}
	fmt.Fprintf(stderr, "toolsift: wrote %s to %s; check them with toolsift status --config %s, then switch a client: toolsift setup CLIENT\n",
		plural(wrote, "server"), f.out, f.out)
	return nil
}

// droppedServers returns the servers of the configuration text old, every folder's and each
// project's, that new lacks. Text that does not parse as a configuration has none to lose.
func droppedServers(old, new []byte) []string {
	paths := func(data []byte) []string {
		cfg, err := config.Parse("", data, func(string) (string, bool) { return "", true })
		if err != nil {
			return nil
		}
		var out []string
		for _, s := range cfg.Servers {
			out = append(out, s.Path())
		}
		for _, servers := range cfg.Projects {
			for _, s := range servers {
				out = append(out, s.Path())
			}
		}
		return out
	}
	now := paths(new)
	var lost []string
	for _, p := range paths(old) {
		if !slices.Contains(now, p) {
			lost = append(lost, strings.TrimPrefix(p, "mcpServers."))
		}
	}
	slices.Sort(lost)
	return lost
}

// showPath writes paths in s that are under home as ~/….
func showPath(s, home string) string {
	if home != "" && filepath.Clean(s) == filepath.Clean(home) {
		return "~"
	}
	return clients.Tilde(s, home)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
