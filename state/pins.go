package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/toolsift/toolsift/pin"
)

// Pins returns the replicas' shared store of pinned tools (see package pin): what one
// replica pinned, and what a person approved on any, holds on all of them.
func (r *Redis) Pins() pin.Store { return pins{r} }

type pins struct{ r *Redis }

const (
	pinsKey        = "toolsift:pins"
	pinsVersionKey = "toolsift:pins:version"
	pinsDefsKey    = "toolsift:pins:definitions" // a hash: digest → definition
)

func (p pins) Load(ctx context.Context) (map[pin.Key]pin.Entry, string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	vals, err := p.r.pins.MGet(ctx, pinsKey, pinsVersionKey).Result()
	if err := quiet(err); err != nil {
		return nil, "", fmt.Errorf("reading pinned tools from the shared state: %w: %w", pin.ErrUnavailable, err)
	}
	data, _ := vals[0].(string)
	version, _ := vals[1].(string)
	if data == "" {
		return map[pin.Key]pin.Entry{}, version, nil
	}
	entries, err := pin.Decode([]byte(data))
	if err != nil {
		return nil, "", fmt.Errorf("the pinned tools in the shared state (%s) are not valid (%v): delete the key, and toolsift pins every tool again as it sees it", pinsKey, err)
	}
	return entries, version, nil
}

func (p pins) Update(ctx context.Context, f func(map[pin.Key]pin.Entry) error) (map[pin.Key]pin.Entry, string, error) {
	unlock, err := lock(ctx, p.r.pins, "pins", quiet)
	if err != nil {
		return nil, "", err
	}
	defer unlock()
	entries, _, err := p.Load(ctx)
	if err != nil {
		return nil, "", err
	}
	if err := f(entries); err != nil {
		return nil, "", err
	}
	added := pin.Apart(entries)
	data, err := pin.Encode(entries)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var stale []string
	if len(added) > 0 {
		digests, err := p.r.pins.HKeys(ctx, pinsDefsKey).Result()
		if err := quiet(err); err != nil {
			return nil, "", fmt.Errorf("reading pinned tools' definitions from the shared state: %w", err)
		}
		used := pin.Referenced(entries)
		for _, d := range digests {
			if !used(d) {
				stale = append(stale, d)
			}
		}
	}
	var incr *redis.IntCmd
	_, err = p.r.pins.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		for d, def := range added {
			js, err := json.Marshal(def)
			if err != nil {
				return err
			}
			tx.HSet(ctx, pinsDefsKey, d, js)
		}
		if len(stale) > 0 {
			tx.HDel(ctx, pinsDefsKey, stale...)
		}
		tx.Set(ctx, pinsKey, data, 0)
		incr = tx.Incr(ctx, pinsVersionKey)
		return nil
	})
	if err := quiet(err); err != nil {
		return nil, "", fmt.Errorf("recording pinned tools in the shared state: %w", err)
	}
	return entries, fmt.Sprint(incr.Val()), nil
}

func (p pins) Version(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	v, err := p.r.pins.Get(ctx, pinsVersionKey).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err := quiet(err); err != nil {
		return "", fmt.Errorf("reading pinned tools from the shared state: %w: %w", pin.ErrUnavailable, err)
	}
	return v, nil
}

func (p pins) Definitions(ctx context.Context) (map[string]pin.Definition, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	all, err := p.r.pins.HGetAll(ctx, pinsDefsKey).Result()
	if err := quiet(err); err != nil {
		return nil, fmt.Errorf("reading pinned tools' definitions from the shared state: %w", err)
	}
	defs := make(map[string]pin.Definition, len(all))
	for d, js := range all {
		var def pin.Definition
		if err := json.Unmarshal([]byte(js), &def); err != nil {
			return nil, fmt.Errorf("the definition %s in the shared state (%s) is not valid: %w", d, pinsDefsKey, err)
		}
		defs[d] = def
	}
	return defs, nil
}

// quiet is note for the pins' operations, which leave the health of the sessions' client
// (Redis.note) alone.
func quiet(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
