package gate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// TestKeySetFollowsTheProvider: a key the provider took out of its set stops verifying
// once the set is older than keysMaxAge, a new key ID fetches the set at once but not more
// than once per keysRefetch, and while the provider is down the keys known keep working
// until they are old.
func TestKeySetFollowsTheProvider(t *testing.T) {
	newKey := func(id string) (*ecdsa.PrivateKey, jose.JSONWebKey) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		return k, jose.JSONWebKey{Key: &k.PublicKey, KeyID: id, Algorithm: "ES256", Use: "sig"}
	}
	k1, j1 := newKey("one")
	k2, j2 := newKey("two")
	var mu sync.Mutex
	set, fetches, down := []jose.JSONWebKey{j1}, 0, false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fetches++
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: set})
	}))
	defer srv.Close()
	now := time.Unix(1e9, 0)
	ks := &keySet{url: srv.URL, http: srv.Client(), now: func() time.Time { return now }, algs: []jose.SignatureAlgorithm{jose.ES256}}
	sign := func(k *ecdsa.PrivateKey, id string) string {
		s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", id))
		jws, _ := s.Sign([]byte(`{}`))
		raw, _ := jws.CompactSerialize()
		return raw
	}
	verifies := func(raw string) bool {
		_, err := ks.VerifySignature(context.Background(), raw)
		return err == nil
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return fetches }

	if !verifies(sign(k1, "one")) || count() != 1 {
		t.Fatalf("the first key: fetches %d", count())
	}
	mu.Lock()
	set = []jose.JSONWebKey{j2} // rotated: one is out, two is in
	mu.Unlock()
	if verifies(sign(k2, "two")) {
		t.Errorf("a new key ID fetched the set within keysRefetch of the last fetch")
	}
	now = now.Add(keysRefetch)
	if !verifies(sign(k2, "two")) || count() != 2 {
		t.Errorf("a new key ID past keysRefetch: fetches %d", count())
	}
	if verifies(sign(k1, "one")) {
		t.Errorf("a key the provider took out still verifies after the set was fetched again")
	}
	for range 10 {
		verifies(sign(k1, "made-up"))
	}
	if count() != 2 {
		t.Errorf("made-up key IDs within keysRefetch fetched the set: %d fetches", count())
	}
	mu.Lock()
	down = true
	mu.Unlock()
	now = now.Add(keysMaxAge - time.Second)
	if !verifies(sign(k2, "two")) {
		t.Errorf("a known key stopped verifying while the provider is down, before keysMaxAge")
	}
	now = now.Add(2 * time.Second)
	if verifies(sign(k2, "two")) {
		t.Errorf("keys older than keysMaxAge verify while the provider cannot be asked")
	}
}
