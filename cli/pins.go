package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/dashboard"
	"github.com/toolsift/toolsift/internal/dirs"
	"github.com/toolsift/toolsift/pin"
	"github.com/toolsift/toolsift/state"
)

// pinStore is where the tools a user trusts are pinned: the shared state when the
// configuration has one (state.redis: every replica of a service, and toolsift review run
// on any host, see the same pins), else pins.json in the state folder. shared, if set, is
// the shared state already open; close releases what pinStore opened.
func pinStore(ctx context.Context, cfg *config.Config, shared *state.Redis) (store pin.Store, close func(), err error) {
	close = func() {}
	if url := cfg.State.RedisURL; url != "" {
		if shared == nil {
			if shared, err = state.Open(ctx, url, time.Minute); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", cfg.File, err)
			}
			close = func() { shared.Close() }
		}
		return shared.Pins(), close, nil
	}
	dir, err := dirs.State()
	if err != nil {
		return nil, nil, fmt.Errorf("no state folder to keep pinned tools in: %w", err)
	}
	return pin.NewFile(filepath.Join(dir, "pins.json")), close, nil
}

// openPins opens the pins a pool judges its servers' tools by, and their store. Shared
// pins that cannot be reached now are read once they can (pin.Unloaded), as the replica
// serves its sessions from memory meanwhile; log says so.
func openPins(ctx context.Context, cfg *config.Config, shared *state.Redis, log *slog.Logger) (*pin.Book, pin.Store, func(), error) {
	store, close, err := pinStore(ctx, cfg, shared)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pinned tools: %w", err)
	}
	book, err := pin.Open(ctx, store, nil)
	if errors.Is(err, pin.ErrUnavailable) {
		log.Warn("pinned tools not read: pinning as on a first start until the shared state answers", "error", err)
		return pin.Unloaded(store, nil), store, close, nil
	}
	if err != nil {
		close()
		return nil, nil, nil, fmt.Errorf("pinned tools: %w", err)
	}
	return book, store, close, nil
}

// settle approves or rejects the version of a held tool with the given digest: the one
// the user was shown. A tool that changed again since is refused, to be reviewed anew.
func settle(ctx context.Context, store pin.Store, keys []pin.Key, digests []string, approve bool) error {
	now := time.Now()
	_, _, err := store.Update(ctx, func(stored map[pin.Key]pin.Entry) error {
		for i, k := range keys {
			e := stored[k]
			var err error
			if approve {
				err = pin.Approve(&e, digests[i], now)
			} else {
				err = pin.Reject(&e, digests[i])
			}
			if err != nil {
				return err
			}
			stored[k] = e
		}
		return nil
	})
	return err
}

// heldTools lists the tools held for review in store that shown admits, for the dashboard.
func heldTools(ctx context.Context, store pin.Store, cfg *config.Config, shown func(pin.Key) bool, log *slog.Logger) []dashboard.Held {
	entries, _, err := store.Load(ctx)
	var defs map[string]pin.Definition
	if err == nil {
		defs, err = store.Definitions(ctx)
	}
	if err != nil {
		log.Warn("dashboard: held tools not read", "error", err)
		return nil
	}
	var out []dashboard.Held
	for _, e := range entries {
		if e.Pending == nil || !shown(e.Key) {
			continue
		}
		e = e.WithDefinitions(defs)
		h := dashboard.Held{Name: reviewName(cfg, entries, e.Key), Key: e.Key, Digest: e.Pending.Digest, Why: e.Pending.Why.String(),
			Seen: e.Pending.At, Findings: e.Pending.Why.Findings, Changes: e.Changes()}
		if e.Pinned != nil {
			h.Pinned = e.Pinned.At
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b dashboard.Held) int { return strings.Compare(a.Name, b.Name) })
	return out
}
