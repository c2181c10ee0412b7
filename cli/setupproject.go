package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/clients"
	"github.com/toolsift/toolsift/config"
)

// projectHandover works out, for setup claude-code run in a project, which of the project's
// .mcp.json servers toolsift now serves there (they are in the configuration's projects
// section, enabled) and so Claude Code should not start too; and which it cannot take over,
// because the configuration lacks them.
func projectHandover(cfg *config.Config, project string, opts clients.Options) (serve, missing []string) {
	if project == "" {
		return nil, nil
	}
	imp, err := clients.Read(filepath.Join(project, ".mcp.json"), clients.ClaudeCode, opts)
	if err != nil {
		return nil, nil
	}
	served := cfg.ForProject(project).Servers
	for _, s := range imp.Servers {
		if s.Disabled {
			continue // Claude Code does not start it either (not approved, or disabled)
		}
		if slices.ContainsFunc(served, func(c config.Server) bool { return c.Name == s.Name && !c.Disabled }) {
			serve = append(serve, s.Key)
		} else {
			missing = append(missing, s.Key)
		}
	}
	return serve, missing
}

// setupProjects hands over, in each project with a .mcp.json (those of the configuration,
// and the working directory), the servers toolsift serves there.
func setupProjects(cfg *config.Config, cwd string, opts clients.Options, dryRun bool, stdout io.Writer, show func(string) string) error {
	dirs := slices.Sorted(maps.Keys(cfg.Projects))
	if cwd != "" && !slices.Contains(dirs, filepath.Clean(cwd)) {
		dirs = append(dirs, filepath.Clean(cwd))
	}
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, ".mcp.json")); err != nil {
			continue
		}
		if err := setupProject(cfg, dir, opts, dryRun, stdout, show); err != nil {
			return err
		}
	}
	return nil
}

// setupProject hands the project's .mcp.json servers that toolsift serves over from Claude
// Code, for this user only (see clients.PlanHandover), and says what it did.
func setupProject(cfg *config.Config, project string, opts clients.Options, dryRun bool, stdout io.Writer, show func(string) string) error {
	serve, missing := projectHandover(cfg, project, opts)
	if len(serve) == 0 && len(missing) == 0 {
		return nil
	}
	h, err := clients.PlanHandover(project, serve, opts.State)
	if err != nil {
		return err
	}
	verb := map[bool]string{true: "would be ", false: ""}[dryRun]
	fmt.Fprintf(stdout, "claude-code: %s (this project's .mcp.json is left as it is)\n", show(filepath.Join(project, ".mcp.json")))
	if len(h.Names) > 0 {
		fmt.Fprintf(stdout, "  %sserved by toolsift in this project only, and no longer started by Claude Code for you: %s\n", verb, strings.Join(h.Names, ", "))
		fmt.Fprintf(stdout, "  %swritten: disabledMcpjsonServers in %s (your own settings for this project; the original is kept in toolsift's state folder)\n", verb, show(h.File))
	} else if len(serve) > 0 {
		fmt.Fprintf(stdout, "  already served by toolsift in this project: %s\n", strings.Join(serve, ", "))
	}
	if len(missing) > 0 {
		fmt.Fprintf(stdout, "  note: not in %s for this project, so Claude Code keeps starting them: %s; add them with toolsift import -o %s --merge, then setup again\n",
			show(cfg.File), strings.Join(missing, ", "), show(cfg.File))
	}
	if dryRun {
		return nil
	}
	return h.Apply()
}

// undoProjects gives Claude Code back the .mcp.json servers setup handed to toolsift, in
// every project it did.
func undoProjects(opts clients.Options, dryRun bool, stdout io.Writer, show func(string) string) error {
	for _, project := range clients.Handovers(opts.State) {
		h, err := clients.PlanTakeBack(project, opts.State)
		if err != nil {
			return err
		}
		if h == nil {
			continue
		}
		fmt.Fprintf(stdout, "claude-code: %s\n  Claude Code starts this project's .mcp.json servers again: %s\n", show(h.File), strings.Join(h.Names, ", "))
		if !dryRun {
			if err := h.Apply(); err != nil {
				return err
			}
		}
	}
	return nil
}
