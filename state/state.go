// Package state keeps what the replicas of a service share, in Redis (or any server that
// speaks its protocol: Valkey): each session's ID, its owner and its state as the proxy
// records it, so that any replica serves any session. Keys expire with the session's idle
// timeout, renewed by every request, so nothing outlives its session.
//
// While Redis cannot be reached, a replica keeps serving the sessions it knows (made or
// served here) from memory, and says so (Healthy); a session it does not know is then a 404,
// which the client answers by initializing again, never a wrong session.
package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/redis/go-redis/v9"
)

// opTimeout bounds one operation on Redis: a request never waits longer for it.
const opTimeout = 2 * time.Second

// Redis is the shared state in a Redis server.
type Redis struct {
	c       *redis.Client
	blocked *redis.Client // for reads that block (see Relay): never holding up c's pool
	// pins is the pinned tools' own (see Pins): polled every second, also while Redis is
	// down, its failed dials must not put c's pool off dialing when Redis is back.
	pins    *redis.Client
	ttl     time.Duration // a session's idle timeout
	process string        // names this process to the others (see Relay)

	mu    sync.Mutex      // guards known and err
	known map[string]bool // sessions made or served here: served from memory while Redis is down
	err   error           // the last operation's error; nil when it succeeded
}

// Open connects to the Redis server at url (redis://[user:password@]host:port/db, or
// rediss:// for TLS); sessions idle for ttl expire.
func Open(ctx context.Context, url string, ttl time.Duration) (*Redis, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("state.redis.url: %w", err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = opTimeout, opTimeout, opTimeout
	process := make([]byte, 12)
	_, _ = rand.Read(process)
	r := &Redis{c: redis.NewClient(opts), blocked: redis.NewClient(opts), pins: redis.NewClient(opts), ttl: ttl, known: map[string]bool{}, process: hex.EncodeToString(process)}
	if err := r.c.Ping(ctx).Err(); err != nil {
		// Not fatal: the replica serves from memory until Redis is back (Healthy says so).
		r.note(err)
	}
	return r, nil
}

// Close closes the connections.
func (r *Redis) Close() error { return errors.Join(r.c.Close(), r.blocked.Close(), r.pins.Close()) }

// Healthy returns why Redis is not usable now, or nil.
func (r *Redis) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return r.note(r.c.Ping(ctx).Err())
}

// note records the outcome of an operation and returns err.
func (r *Redis) note(err error) error {
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
	return err
}

func key(id string) string { return "toolsift:session:" + id }

// Save stores the proxy's record of session id.
func (r *Redis) Save(ctx context.Context, id string, rec []byte) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key(id), "record", rec)
		p.Expire(ctx, key(id), r.ttl)
		return nil
	})
	return r.note(err)
}

// Load returns the proxy's record of session id, if one is stored.
func (r *Redis) Load(ctx context.Context, id string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rec, err := r.c.HGet(ctx, key(id), "record").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, r.note(nil)
	}
	return rec, err == nil, r.note(err)
}

// SetOwner records the credential that opened session id.
func (r *Redis) SetOwner(ctx context.Context, id string, cred [32]byte) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key(id), "owner", hex.EncodeToString(cred[:]))
		p.Expire(ctx, key(id), r.ttl)
		return nil
	})
	return r.note(err)
}

// Owner returns the credential that opened session id; ok is false when none is stored.
func (r *Redis) Owner(ctx context.Context, id string) (cred [32]byte, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	s, err := r.c.HGet(ctx, key(id), "owner").Result()
	if err != nil {
		return cred, false, r.note(err)
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(cred) {
		return cred, false, r.note(nil)
	}
	copy(cred[:], b)
	return cred, true, r.note(nil)
}

// ResolveSessionIdManager gives mcp-go's streamable HTTP server its session IDs (it is a
// server.SessionIdManagerResolver): stored in Redis, so that every replica knows them. A
// session is ended only by its client's DELETE: mcp-go also ends the sessions one replica
// has not seen for a while, or that it held a stream of at shutdown, and those live on in
// the other replicas until their keys expire.
func (r *Redis) ResolveSessionIdManager(req *http.Request) server.SessionIdManager {
	return ids{r: r, deleting: req != nil && req.Method == http.MethodDelete}
}

// ids is the SessionIdManager of one request.
type ids struct {
	r        *Redis
	deleting bool // the request is the client's DELETE
}

func (m ids) Generate() string {
	b := make([]byte, 16)
	rand.Read(b)
	id := "ts-" + hex.EncodeToString(b)
	m.r.mu.Lock()
	m.r.known[id] = true
	m.r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	m.r.note(m.r.c.SetArgs(ctx, key(id)+":open", "1", redis.SetArgs{Mode: "NX", TTL: m.r.ttl}).Err())
	return id
}

// Validate reports whether id is a session of the service, and renews its keys' lease.
func (m ids) Validate(id string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var renewed *redis.BoolCmd
	_, err := m.r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		renewed = p.Expire(ctx, key(id)+":open", m.r.ttl)
		p.Expire(ctx, key(id), m.r.ttl)
		return nil
	})
	m.r.note(err)
	m.r.mu.Lock()
	known := m.r.known[id]
	m.r.mu.Unlock()
	switch {
	case err != nil && known:
		return false, nil // Redis is down: serve what this replica knows
	case err != nil:
		return false, fmt.Errorf("session %s: %w", id, err)
	case !renewed.Val():
		m.r.forget(id)
		return false, errors.New("no such session")
	}
	if !known {
		m.r.mu.Lock()
		m.r.known[id] = true
		m.r.mu.Unlock()
	}
	return false, nil
}

// Terminate ends session id for every replica when its client asked (DELETE); otherwise
// only this replica forgets it.
func (m ids) Terminate(id string) (bool, error) {
	m.r.forget(id)
	if !m.deleting {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return false, m.r.note(m.r.c.Del(ctx, key(id), key(id)+":open").Err())
}

func (r *Redis) forget(id string) {
	r.mu.Lock()
	delete(r.known, id)
	r.mu.Unlock()
}
