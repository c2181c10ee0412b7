package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/pin"
)

// TestCacheServesARestartAtOnce runs a pool that caches a server's catalog, then a second
// one whose server is slow to start: it has the catalog at once, and a call waits for the
// server instead of failing.
func TestCacheServesARestartAtOnce(t *testing.T) {
	dir := t.TempDir()
	srv := config.Server{Name: "s", Prefix: "s", Command: "x", Args: []string{"--a"}}
	conn := &fakeConn{tools: []json.RawMessage{rawTool("a"), rawTool("b")}}
	dialNow := func(context.Context, config.Server, *Tail, Notify, Peer) (Conn, Info, error) {
		return conn, Info{Summary: "fake"}, nil
	}
	first := NewPool([]config.Server{srv}, Options{CacheDir: dir, Dial: dialNow})
	first.Start(Hooks{})
	waitFor(t, "first connection", func() bool { return len(first.Catalog().Tools) == 2 })
	first.Close()
	if files, _ := filepath.Glob(filepath.Join(dir, "s-*.json")); len(files) != 1 {
		t.Fatalf("cache files = %v", files)
	}

	release := make(chan struct{})
	dialSlow := func(ctx context.Context, _ config.Server, _ *Tail, _ Notify, _ Peer) (Conn, Info, error) {
		select {
		case <-release:
			return conn, Info{Summary: "fake"}, nil
		case <-ctx.Done():
			return nil, Info{}, ctx.Err()
		}
	}
	second := NewPool([]config.Server{srv}, Options{CacheDir: dir, Dial: dialSlow})
	defer second.Close()
	second.Start(Hooks{})
	if got := len(second.Catalog().Tools); got != 2 {
		t.Fatalf("catalog from cache has %d tools, want 2", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if pending := second.WaitStarted(ctx); len(pending) != 0 {
		t.Errorf("a cached server is waited for: %v", pending)
	}
	st := second.Statuses()[0]
	if st.State != StateStarting || st.Cached.IsZero() || st.Summary != "fake" {
		t.Errorf("status = %+v, want starting, with a cache age and summary", st)
	}
	done := make(chan error, 1)
	go func() {
		_, err := second.Call(context.Background(), "s__a", nil, nil, nil)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("call returned before the server was up: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("call after the server came up: %v", err)
	}

	// Another launch configuration does not use this entry.
	other := srv
	other.Args = []string{"--b"}
	third := NewPool([]config.Server{other}, Options{CacheDir: dir, Dial: dialSlow})
	defer third.Close()
	if got := len(third.Catalog().Tools); got != 0 {
		t.Errorf("a changed configuration got %d cached tools", got)
	}
}

func TestCacheIgnoresBrokenEntries(t *testing.T) {
	dir := t.TempDir()
	srv := config.Server{Name: "s/x", Prefix: "s", Command: "x"}
	if err := os.WriteFile(cachePath(dir, srv), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := NewPool([]config.Server{srv}, Options{CacheDir: dir, Dial: func(ctx context.Context, _ config.Server, _ *Tail, _ Notify, _ Peer) (Conn, Info, error) {
		<-ctx.Done()
		return nil, Info{}, ctx.Err()
	}})
	defer p.Close()
	if got := len(p.Catalog().Tools); got != 0 {
		t.Errorf("broken entry gave %d tools", got)
	}
	if base := filepath.Base(cachePath(dir, srv)); base[:2] != "s_" {
		t.Errorf("cache file name %q keeps an unsafe character", base)
	}
}

// BenchmarkNewPoolFromCache measures what a warm start costs before toolsift can answer:
// reading and decoding the cached catalogs of the 40 first public catalogs (1.6 MB of JSON,
// 1,135 tools) into a pool.
func BenchmarkNewPoolFromCache(b *testing.B) {
	files, _ := filepath.Glob("../bench/catalogs/*.json")
	if len(files) < 40 {
		b.Fatalf("%d catalogs in ../bench/catalogs, want 40", len(files))
	}
	dir := b.TempDir()
	var servers []config.Server
	tools := 0
	for i, f := range files[:40] {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var list struct{ Tools []json.RawMessage }
		if err := json.Unmarshal(data, &list); err != nil {
			b.Fatal(err)
		}
		srv := config.Server{Name: fmt.Sprint("s", i), Prefix: fmt.Sprint("s", i), Type: config.TypeStdio, Command: f}
		if err := saveCache(dir, srv, &cacheEntry{Server: srv.Name, Saved: time.Now(), Tools: list.Tools}); err != nil {
			b.Fatal(err)
		}
		servers = append(servers, srv)
		tools += len(list.Tools)
	}
	// As toolsift starts: its pins, those of the start before, judge every tool.
	pinsFile := filepath.Join(b.TempDir(), "pins.json")
	pins, err := pin.Open(context.Background(), pin.NewFile(pinsFile), nil)
	if err != nil {
		b.Fatal(err)
	}
	NewPool(servers, Options{CacheDir: dir, Pins: pins}) // pins each tool on first sight
	b.Run("open pins", func(b *testing.B) {
		for range b.N {
			if _, err := pin.Open(context.Background(), pin.NewFile(pinsFile), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, opts := range []Options{{CacheDir: dir}, {CacheDir: dir, Pins: pins}} {
		name := "unpinned"
		if opts.Pins != nil {
			name = "pinned"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				if n := len(NewPool(servers, opts).Catalog().Tools); n != tools {
					b.Fatalf("%d tools from the cache, want %d", n, tools)
				}
			}
		})
	}
}

// TestPruneCache: an entry left by an earlier launch configuration of the same server (a
// rotated token) is removed once stale; a fresh one, another server's, and one of a server
// whose name starts alike are kept. (Temporary files a crash left are atomicfile's.)
func TestPruneCache(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-staleAfter - time.Hour)
	srv := config.Server{Name: "git", Command: "x", Env: map[string]string{"TOKEN": "new"}}
	files := []struct {
		name string
		mod  time.Time
		kept bool
	}{
		{"git-0123456789abcdef.json", old, false},                // an old token's
		{"git-fedcba9876543210.json", now.Add(-time.Hour), true}, // in use elsewhere
		{"git-lab-0123456789abcdef.json", old, true},             // server git-lab
		{"github-0123456789abcdef.json", old, true},              // server github
		{"git-notes.json", old, true},                            // not an entry
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, f.mod, f.mod); err != nil {
			t.Fatal(err)
		}
	}
	if err := saveCache(dir, srv, &cacheEntry{Server: "git"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if kept := err == nil; kept != f.kept {
			t.Errorf("%s: kept = %v, want %v", f.name, kept, f.kept)
		}
	}
	if _, err := loadCache(dir, srv); err != nil {
		t.Errorf("the new entry: %v", err)
	}
}
