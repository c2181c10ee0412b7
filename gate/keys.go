package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// How the identity provider's keys are kept: a key set older than keysMaxAge is fetched
// again, so that a key the provider took out of its set (retired, or leaked) stops being
// accepted; a token naming a key not in the set fetches it again at once (a rotation), but
// no more often than keysRefetch, so that tokens with made-up key IDs cannot turn the
// service into a flood of requests to the provider.
const (
	keysMaxAge  = 10 * time.Minute
	keysRefetch = time.Second
)

// keySet is the provider's JWKS, for go-oidc's verifier (its oidc.KeySet). go-oidc's own
// RemoteKeySet keeps a key for good once fetched, and fetches the set for every unknown
// key ID.
type keySet struct {
	url  string
	http *http.Client
	now  func() time.Time
	algs []jose.SignatureAlgorithm

	mu      sync.Mutex // guards the fields below; held across a fetch, so fetches are one at a time
	keys    []jose.JSONWebKey
	fetched time.Time // when keys were fetched; zero: never
}

// VerifySignature checks raw's signature with the key its header names, and returns its
// payload.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, k.algs)
	if err != nil {
		return nil, err
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("want one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, err := k.get(ctx, kid)
	if err != nil {
		return nil, err
	}
	for _, key := range keys {
		if key.KeyID == kid && (key.Use == "" || key.Use == "sig") {
			return jws.Verify(&key)
		}
	}
	return nil, errors.New("no key of the token's key ID")
}

// get returns the keys, fetched again when they are old, or when kid is not among them
// and they were not fetched within keysRefetch.
func (k *keySet) get(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	age := k.now().Sub(k.fetched)
	known := false
	for _, key := range k.keys {
		known = known || key.KeyID == kid
	}
	if !k.fetched.IsZero() && age < keysMaxAge && (known || age < keysRefetch) {
		return k.keys, nil
	}
	keys, err := k.fetch(ctx)
	if err != nil {
		if age < keysMaxAge {
			return k.keys, nil // keep what is known while the provider is down
		}
		return nil, err
	}
	k.keys, k.fetched = keys, k.now()
	return keys, nil
}

func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the provider's keys: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the provider's keys: %s", resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("reading the provider's keys: %w", err)
	}
	return set.Keys, nil
}
