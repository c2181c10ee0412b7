package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/terminal"
	"github.com/toolsift/toolsift/pin"
	"github.com/toolsift/toolsift/upstream"
)

const reviewUsage = `Usage: toolsift review [--config FILE] [--approve | --reject] [NAME...]

Lists the tools held for your review, each with what changed: a tool whose definition
(description, schemas, annotations) is not the one toolsift pinned when it first saw it, or
that looks poisoned (it tells the model to read a secret file, to keep something from you,
to pass the conversation along…), or, for a server with pin: all, a tool never approved.
A held tool is not listed, searched or callable until you approve it.

  toolsift review                              what is held, and why, with a diff
  toolsift review --approve NAME...            pin the version shown: the tool is back
  toolsift review --reject NAME...             keep that version out for good

NAME is the tool's name as the model sees it (github__create_issue) or SERVER/TOOL, and may
end in @VERSION, as review shows it: that version, and no other, is settled. By name alone,
the version held must be one a review showed you. The toolsift processes running pick up an
approval within a second.
`

func init() {
	register(command{
		name: "review", synopsis: "[--approve | --reject] [NAME...]",
		summary: "show the tools held for review (changed or poisoned), approve or reject them",
		help:    reviewUsage, run: noStdin(reviewCmd),
	})
}

// reviewCmd lists, approves or rejects held tools: toolsift review.
func reviewCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("review", flag.ContinueOnError)
	configFile := fs.String("config", "", "configuration `FILE`")
	approve := fs.Bool("approve", false, "pin the held version of each NAME")
	reject := fs.Bool("reject", false, "keep the held version of each NAME out")
	names, done, err := parseFlags(fs, args, stdout)
	if done {
		return err
	}
	if *approve && *reject {
		return fmt.Errorf("%w: --approve or --reject, not both", errUsage)
	}
	if (*approve || *reject) != (len(names) > 0) {
		return fmt.Errorf("%w: name the tools to approve or reject (toolsift review lists them), after --approve or --reject", errUsage)
	}
	cfg, err := loadConfig(*configFile, warnTo(stderr))
	if err != nil {
		return err
	}
	store, closeStore, err := pinStore(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer closeStore()
	entries, _, err := store.Load(ctx)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		defs, err := store.Definitions(ctx)
		if err != nil {
			return err
		}
		for k, e := range entries {
			entries[k] = e.WithDefinitions(defs)
		}
		showHeld(stdout, cfg, entries)
		// What was shown may be approved by name alone: a version that replaces it since
		// may not (see pin.Version.Shown).
		_, _, err = store.Update(ctx, func(stored map[pin.Key]pin.Entry) error {
			now := time.Now()
			for k, e := range stored {
				if shown := entries[k].Pending; shown != nil && e.Pending != nil && e.Pending.Digest == shown.Digest && e.Pending.Shown.IsZero() {
					v := *e.Pending
					v.Shown = now
					e.Pending = &v
					stored[k] = e
				}
			}
			return nil
		})
		return err
	}
	keys := make([]pin.Key, len(names))
	digests := make([]string, len(names))
	for i, n := range names {
		k, digest, err := heldNamed(cfg, entries, n)
		if err != nil {
			return err
		}
		keys[i], digests[i] = k, digest
	}
	if err := settle(ctx, store, keys, digests, *approve); err != nil {
		return err
	}
	for _, k := range keys {
		name := terminal.Escape(reviewName(cfg, entries, k))
		if *approve {
			fmt.Fprintf(stdout, "approved %s: this version is pinned, and the tool is back\n", name)
		} else {
			fmt.Fprintf(stdout, "rejected %s: this version stays out; a later one is held for review again\n", name)
		}
	}
	return nil
}

// heldNamed finds the held tool arg names, NAME or NAME@VERSION (NAME its exposed name or
// SERVER/TOOL, VERSION the start of its digest as review shows it), and the digest of the
// version to settle: the one named, or, by name alone, the one a review showed.
func heldNamed(cfg *config.Config, entries map[pin.Key]pin.Entry, arg string) (pin.Key, string, error) {
	name, version, _ := strings.Cut(arg, "@")
	var found []pin.Key
	for k, e := range entries {
		if e.Pending != nil && (name == exposedName(cfg, k) || name == k.String()) {
			found = append(found, k)
		}
	}
	switch {
	case len(found) == 0:
		return pin.Key{}, "", fmt.Errorf("%q is not held for review: run toolsift review for the tools that are", terminal.Escape(arg))
	case len(found) > 1:
		var both []string
		for _, k := range found {
			both = append(both, terminal.Escape(k.String()))
		}
		slices.Sort(both)
		return pin.Key{}, "", fmt.Errorf("%q names %s: name one as SERVER/TOOL", terminal.Escape(name), strings.Join(both, " and "))
	}
	p := entries[found[0]].Pending
	switch {
	case version != "" && (len(version) < 8 || !strings.HasPrefix(p.Digest, version)):
		return pin.Key{}, "", fmt.Errorf("%s is held in another version than %s now: it changed again; run toolsift review to see it", terminal.Escape(name), terminal.Escape(version))
	case version == "" && p.Shown.IsZero():
		return pin.Key{}, "", fmt.Errorf("the version of %s held now was never shown to you: run toolsift review first", terminal.Escape(name))
	}
	return found[0], p.Digest, nil
}

// exposedName is the name the model sees for a tool (upstream.ExposedName, by its server's
// prefix); SERVER/TOOL for a server no longer configured.
func exposedName(cfg *config.Config, k pin.Key) string {
	for _, s := range cfg.Servers {
		if s.Name == k.Server {
			return upstream.ExposedName(s.Prefix, k.Tool)
		}
	}
	return k.String()
}

// reviewName is how a review names a held tool: its exposed name, or SERVER/TOOL where
// another held tool has the same exposed name (a server posing as another, say).
func reviewName(cfg *config.Config, entries map[pin.Key]pin.Entry, k pin.Key) string {
	name := exposedName(cfg, k)
	for other, e := range entries {
		if other != k && e.Pending != nil && exposedName(cfg, other) == name {
			return k.String()
		}
	}
	return name
}

// showHeld prints each held tool: why, what changed, and the commands that settle it.
func showHeld(w io.Writer, cfg *config.Config, entries map[pin.Key]pin.Entry) {
	var held []pin.Entry
	rejected := 0
	for _, e := range entries {
		if e.Pending != nil {
			held = append(held, e)
		}
		rejected += len(e.Rejected)
	}
	if len(held) == 0 {
		fmt.Fprintln(w, "No tool is held for review.")
		if rejected > 0 {
			fmt.Fprintf(w, "(%s rejected, kept out.)\n", plural(rejected, "version"))
		}
		return
	}
	slices.SortFunc(held, func(a, b pin.Entry) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	fmt.Fprintf(w, "%s held for review: not listed, searched or callable until approved.\n", plural(len(held), "tool"))
	for _, e := range held {
		name := terminal.Escape(reviewName(cfg, entries, e.Key))
		p := e.Pending
		fmt.Fprintf(w, "\n%s (server %s, tool %s), version %s\n", name, terminal.Escape(e.Server), terminal.Escape(e.Tool), p.Digest[:12])
		fmt.Fprintf(w, "  held: %s\n", terminal.Escape(p.Why.String()))
		fmt.Fprintf(w, "  seen: %s\n", p.At.UTC().Format("2006-01-02 15:04 UTC"))
		for _, f := range p.Why.Findings {
			fmt.Fprintf(w, "  looks poisoned: %s (%s), in %s: %s\n", terminal.Escape(f.Why), terminal.Escape(f.Rule), terminal.Escape(f.Field), terminal.Escape(f.Excerpt))
		}
		if e.Pinned != nil {
			fmt.Fprintf(w, "  compared with the version pinned on %s:\n", e.Pinned.At.UTC().Format(time.DateOnly))
		} else {
			fmt.Fprintf(w, "  never pinned before; its definition:\n")
		}
		for _, part := range e.Changes() {
			fmt.Fprintf(w, "  %s:\n", part.Name)
			for _, l := range part.Lines {
				fmt.Fprintf(w, "    %c %s\n", l.Op, terminal.Escape(l.Text))
			}
		}
		fmt.Fprintf(w, "  approve: toolsift review --approve %s@%s\n  reject:  toolsift review --reject %s@%s\n", name, p.Digest[:12], name, p.Digest[:12])
	}
}
