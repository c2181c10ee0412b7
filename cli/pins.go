package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/toolsift/toolsift/config"
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

// openPins opens the pins a pool judges its servers' tools by.
func openPins(ctx context.Context, cfg *config.Config, shared *state.Redis, now func() time.Time) (*pin.Book, func(), error) {
	store, close, err := pinStore(ctx, cfg, shared)
	if err != nil {
		return nil, nil, err
	}
	book, err := pin.Open(ctx, store, now)
	if err != nil {
		close()
		return nil, nil, err
	}
	return book, close, nil
}
