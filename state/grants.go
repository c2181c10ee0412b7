package state

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolsift/toolsift/oauth"
)

// KeyEnv names the environment variable that holds the key grants are encrypted with in
// Redis: 32 random bytes in base64 (openssl rand -base64 32), the same on every replica.
const KeyEnv = "TOOLSIFT_STATE_KEY"

// ParseKey reads a key as KeyEnv holds it.
func ParseKey(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%s must be 32 random bytes in base64, the same on every replica (make one with: openssl rand -base64 32)", KeyEnv)
	}
	return key, nil
}

// Grants keeps the sign-ins of a service's users in Redis, so that every replica acts as
// each user with their own grant: an oauth.Store. Each grant is sealed with AES-256-GCM under
// a key from the environment (KeyEnv), bound to its own key name, so that Redis never holds
// a token in the clear and a sealed grant moved under another name does not open. Grants
// expire when they would be of no more use: a week after their refresh token was last used.
type Grants struct {
	r    *Redis
	aead cipher.AEAD
}

// grantTTL is how long a grant is kept unused.
const grantTTL = 7 * 24 * time.Hour

// Grants returns the grant store of r, sealed with key (see ParseKey).
func (r *Redis) Grants(key []byte) (*Grants, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Grants{r: r, aead: aead}, nil
}

func grantKey(key string) string { return "toolsift:grant:" + key }

func (g *Grants) Load(ctx context.Context, key string) (*oauth.Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	sealed, err := g.r.c.Get(ctx, grantKey(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		g.r.note(nil)
		return nil, oauth.ErrNoGrant
	}
	if err := g.r.note(err); err != nil {
		return nil, fmt.Errorf("reading a sign-in from the shared state: %w", err)
	}
	return g.open(key, sealed)
}

func (g *Grants) open(key string, sealed []byte) (*oauth.Grant, error) {
	n := g.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("a sign-in in the shared state is damaged")
	}
	plain, err := g.aead.Open(nil, sealed[:n], sealed[n:], []byte(key))
	if err != nil {
		return nil, fmt.Errorf("a sign-in in the shared state does not open with %s (another key?): %w", KeyEnv, err)
	}
	var gr oauth.Grant
	if err := json.Unmarshal(plain, &gr); err != nil {
		return nil, err
	}
	return &gr, nil
}

func (g *Grants) Save(ctx context.Context, key string, gr *oauth.Grant) error {
	plain, err := json.Marshal(gr)
	if err != nil {
		return err
	}
	nonce := make([]byte, g.aead.NonceSize())
	rand.Read(nonce)
	sealed := g.aead.Seal(nonce, nonce, plain, []byte(key))
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return g.r.note(g.r.c.Set(ctx, grantKey(key), sealed, grantTTL).Err())
}

func (g *Grants) Delete(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return g.r.note(g.r.c.Del(ctx, grantKey(key)).Err())
}

// List returns every grant; those that do not open are left out.
func (g *Grants) List(ctx context.Context) (map[string]*oauth.Grant, error) {
	out := map[string]*oauth.Grant{}
	iter := g.r.c.Scan(ctx, 0, grantKey("*"), 100).Iterator()
	for iter.Next(ctx) {
		name := strings.TrimPrefix(iter.Val(), grantKey(""))
		if gr, err := g.Load(ctx, name); err == nil {
			out[name] = gr
		}
	}
	return out, g.r.note(iter.Err())
}

// Lock takes the refresh lock of the grant under key, shared by every replica: a refresh
// token rotates, and two replicas refreshing one grant at once would spend it twice. It
// waits for another holder within ctx; a holder that dies leaves the lock to expire.
func (r *Redis) Lock(ctx context.Context, key string) (func(), error) {
	return lock(ctx, r.c, key, r.note)
}

// lock takes the lock named key on c (see Lock); note sees each operation's error.
func lock(ctx context.Context, c *redis.Client, key string, note func(error) error) (func(), error) {
	const lease = 30 * time.Second // longer than a refresh may take (oauth: 30s)
	token := make([]byte, 16)
	rand.Read(token)
	name := "toolsift:lock:" + key
	for {
		ok, err := c.SetNX(ctx, name, token, lease).Result()
		if err := note(err); err != nil {
			return nil, fmt.Errorf("taking a lock in the shared state: %w", err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return func() {
		// Only its own lock: one that expired and was taken by another is left alone.
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		unlock.Run(ctx, c, []string{name}, token)
	}, nil
}

var unlock = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// Pending keeps a service's sign-ins under way (links and their flows: signin.Pending),
// sealed like the grants, so that a browser may open a link on one replica and come back to
// another.
type Pending struct{ g *Grants }

// Pending returns the store of sign-ins under way, sealed as g's grants.
func (g *Grants) Pending() *Pending { return &Pending{g: g} }

func pendingKey(key string) string { return "toolsift:signin:" + key }

func (p *Pending) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	nonce := make([]byte, p.g.aead.NonceSize())
	rand.Read(nonce)
	sealed := p.g.aead.Seal(nonce, nonce, value, []byte(key))
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return p.g.r.note(p.g.r.c.Set(ctx, pendingKey(key), sealed, ttl).Err())
}

func (p *Pending) Get(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	sealed, err := p.g.r.c.Get(ctx, pendingKey(key)).Bytes()
	return p.unseal(key, sealed, err)
}

func (p *Pending) Take(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	sealed, err := p.g.r.c.GetDel(ctx, pendingKey(key)).Bytes()
	return p.unseal(key, sealed, err)
}

func (p *Pending) Delete(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return p.g.r.note(p.g.r.c.Del(ctx, pendingKey(key)).Err())
}

func (p *Pending) unseal(key string, sealed []byte, err error) ([]byte, bool, error) {
	if errors.Is(err, redis.Nil) {
		return nil, false, p.g.r.note(nil)
	}
	if err := p.g.r.note(err); err != nil {
		return nil, false, err
	}
	n := p.g.aead.NonceSize()
	if len(sealed) < n {
		return nil, false, errors.New("a sign-in under way in the shared state is damaged")
	}
	plain, err := p.g.aead.Open(nil, sealed[:n], sealed[n:], []byte(key))
	if err != nil {
		return nil, false, fmt.Errorf("a sign-in under way does not open with %s: %w", KeyEnv, err)
	}
	return plain, true, nil
}
