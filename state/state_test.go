package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/pin"
)

// redisServer starts a real redis-server on a free loopback port for the test, and
// returns its URL and a function that stops it.
func redisServer(t *testing.T) (string, func()) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not found: install Debian's redis-server package (scripts/deps.sh does)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(stop)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port), stop
}

func open(t *testing.T, url string) *Redis {
	r, err := Open(context.Background(), url, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestSessionIDs: an ID made by one replica is valid on another; only a client's DELETE
// ends it for all (mcp-go's sweeper and shutdown end it on one replica only); an unknown ID
// is refused; while Redis is down a replica goes on with the IDs it knows, and refuses the
// others.
func TestSessionIDs(t *testing.T) {
	url, stop := redisServer(t)
	a, b := open(t, url), open(t, url)
	id := a.ResolveSessionIdManager(nil).Generate()
	if _, err := b.ResolveSessionIdManager(nil).Validate(id); err != nil {
		t.Fatalf("another replica refuses a new session: %v", err)
	}
	if _, err := b.ResolveSessionIdManager(nil).Validate("ts-made-up"); err == nil {
		t.Errorf("a made-up session ID is valid")
	}
	// The sweeper (no request) ends it here only.
	b.ResolveSessionIdManager(nil).Terminate(id)
	if _, err := a.ResolveSessionIdManager(nil).Validate(id); err != nil {
		t.Errorf("one replica's sweeper ended the session for all: %v", err)
	}
	// The client's DELETE ends it everywhere.
	del, _ := http.NewRequest(http.MethodDelete, "/mcp", nil)
	b.ResolveSessionIdManager(del).Terminate(id)
	if _, err := a.ResolveSessionIdManager(nil).Validate(id); err == nil {
		t.Errorf("a DELETE on one replica left the session valid on another")
	}

	known := a.ResolveSessionIdManager(nil).Generate()
	stop()
	if _, err := a.ResolveSessionIdManager(nil).Validate(known); err != nil {
		t.Errorf("with Redis down, the replica that knows a session refuses it: %v", err)
	}
	if _, err := b.ResolveSessionIdManager(nil).Validate(known); err == nil {
		t.Errorf("with Redis down, a replica that never saw a session takes it")
	}
	if a.Healthy(context.Background()) == nil {
		t.Errorf("Healthy says nothing with Redis down")
	}
}

// TestGrantsAreSealed: a grant reads back with the key it was sealed with, and not with
// another key, nor moved under another name (a person's sealed grant copied under someone
// else's key); Redis holds no token in the clear.
func TestGrantsAreSealed(t *testing.T) {
	url, _ := redisServer(t)
	r := open(t, url)
	key := bytes.Repeat([]byte{1}, 32)
	g, _ := r.Grants(key)
	ctx := context.Background()
	secret := "at-very-secret-0123456789"
	if err := g.Save(ctx, "u-ann", &oauth.Grant{AccessToken: secret, RefreshToken: "rt-also-secret"}); err != nil {
		t.Fatal(err)
	}
	got, err := g.Load(ctx, "u-ann")
	if err != nil || got.AccessToken != secret {
		t.Fatalf("Load = %v, %v", got, err)
	}
	raw, _ := r.c.Get(ctx, grantKey("u-ann")).Bytes()
	if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte("rt-also-secret")) {
		t.Errorf("a token is in Redis in the clear")
	}
	other, _ := r.Grants(bytes.Repeat([]byte{2}, 32))
	if _, err := other.Load(ctx, "u-ann"); err == nil {
		t.Errorf("a grant opened with another key")
	}
	r.c.Set(ctx, grantKey("u-bob"), raw, time.Minute)
	if _, err := g.Load(ctx, "u-bob"); err == nil {
		t.Errorf("ann's sealed grant, moved under bob's name, opened")
	}
	if _, err := g.Load(ctx, "u-nobody"); !errors.Is(err, oauth.ErrNoGrant) {
		t.Errorf("a missing grant: %v", err)
	}
	if _, err := ParseKey("c2hvcnQ="); err == nil {
		t.Errorf("a short key was taken")
	}
}

// TestLockIsExclusive: one holder at a time across replicas; a holder's release frees it.
func TestLockIsExclusive(t *testing.T) {
	url, _ := redisServer(t)
	a, b := open(t, url), open(t, url)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		r := a
		if i%2 == 1 {
			r = b
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			release, err := r.Lock(ctx, "g-1")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
			inside.Add(-1)
			release()
		})
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d holders of one lock at once", most.Load())
	}
}

// TestPins: what one replica pins the other sees, and two replicas recording at once keep
// both records.
func TestPins(t *testing.T) {
	url, stop := redisServer(t)
	defer stop()
	ctx := context.Background()
	a, err := pin.Open(ctx, open(t, url).Pins(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pin.Open(ctx, open(t, url).Pins(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, book := range []*pin.Book{a, b} {
		wg.Go(func() {
			for j := range 20 {
				book.Judge(pin.Seen{Key: pin.Key{Server: "s", Tool: fmt.Sprint(i, "-", j)}, Mode: pin.Changes, Digest: func() string { return "v1" }})
				if err := book.Flush(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// Whichever wrote last, a fresh reader has both's.
	a, err = pin.Open(ctx, open(t, url).Pins(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		for j := range 20 {
			if _, ok := a.Entry(pin.Key{Server: "s", Tool: fmt.Sprint(i, "-", j)}); !ok {
				t.Errorf("pin %d-%d lost", i, j)
			}
		}
	}
	// A change b sees is held on a too.
	if _, err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if why := b.Judge(pin.Seen{Key: pin.Key{Server: "s", Tool: "0-0"}, Mode: pin.Changes, Digest: func() string { return "v2" }}); why == nil || why.Kind != pin.KindChanged {
		t.Fatalf("b's change: %v", why)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if changed, err := a.Refresh(ctx); err != nil || !changed {
		t.Fatalf("a's refresh: %v %v", changed, err)
	}
	if e, _ := a.Entry(pin.Key{Server: "s", Tool: "0-0"}); e.Pending == nil || e.Pending.Digest != "v2" {
		t.Fatalf("a does not see b's pending version: %+v", e)
	}
}
