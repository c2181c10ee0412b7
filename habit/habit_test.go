package habit

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMajor(t *testing.T) {
	for v, want := range map[string]string{"1.2.3": "1", "v2.0": "2", "10": "10", "": "", " 3.1 ": "3", "2026.8.31": "2026", strings.Repeat("9", 40): strings.Repeat("9", 20),
		"a" + strings.Repeat("é", 30): "a" + strings.Repeat("é", 19), "\xff1": "\uFFFD1"} {
		if got := Major(v); got != want {
			t.Errorf("Major(%q) = %q, want %q", v, got, want)
		}
	}
}

func TestLearnAndLookup(t *testing.T) {
	day := time.Date(2026, 12, 6, 9, 30, 0, 0, time.UTC)
	f := Open(filepath.Join(t.TempDir(), "habits.json"), nil, func() time.Time { return day })
	ctx := context.Background()
	if _, ok := f.Lookup(Key{Name: "agent", Version: "1.0"}); ok {
		t.Fatal("found before learning")
	}
	if err := f.Learn(ctx, Key{Name: "agent", Version: "1.0"}, false, false); err != nil {
		t.Fatal(err)
	}
	c, ok := f.Lookup(Key{Name: "agent", Version: "1.9.2"})
	if !ok || c.Relists || !c.Learned.Equal(day) {
		t.Fatalf("the same major version: %+v %v", c, ok)
	}
	if _, ok := f.Lookup(Key{Name: "agent", Version: "2.0"}); ok {
		t.Error("a new major version is a new client")
	}
	if err := f.Know(ctx, Key{Name: "cursor-vscode", Version: "1.0.0"}, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Lookup(Key{Name: "cursor-vscode", Version: "1.0.0"}); ok {
		t.Error("a known client's record is for status, not a learned habit")
	}
	before, _ := os.Stat(f.path)
	if err := f.Learn(ctx, Key{Name: "agent", Version: "1.0"}, false, false); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(f.path); !after.ModTime().Equal(before.ModTime()) {
		t.Error("learning nothing new wrote the file")
	}
	// The client starts re-listing (an update): the habit changes back.
	if err := f.Learn(ctx, Key{Name: "agent", Version: "1.1"}, true, false); err != nil {
		t.Fatal(err)
	}
	if c, _ := f.Lookup(Key{Name: "agent", Version: "1.0"}); !c.Relists {
		t.Errorf("after re-listing: %+v", c)
	}
	if all := f.All(); len(all) != 2 {
		t.Errorf("all: %+v", all)
	}
}

// Two toolsift processes learning at once lose nothing; the file stays bounded.
func TestLearnTogether(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habits.json")
	var wg sync.WaitGroup
	for p := range 2 {
		f := Open(path, nil, nil)
		wg.Go(func() {
			for i := range 30 {
				if err := f.Learn(context.Background(), Key{Name: fmt.Sprintf("client-%d-%d", p, i), Version: "1"}, i%2 == 0, false); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	f := Open(path, nil, nil)
	for p := range 2 {
		for i := range 30 {
			if c, ok := f.Lookup(Key{Name: fmt.Sprintf("client-%d-%d", p, i), Version: "1"}); !ok || c.Relists != (i%2 == 0) {
				t.Errorf("client-%d-%d: %+v %v", p, i, c, ok)
			}
		}
	}
	day := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // after the clients above
	for i := range MaxClients + 20 {
		g := Open(path, nil, func() time.Time { return day.Add(time.Duration(i) * 24 * time.Hour) })
		g.Learn(context.Background(), Key{Name: fmt.Sprint("many-", i), Version: "1"}, false, false)
	}
	all := f.All()
	if len(all) != MaxClients || all[0].Name != fmt.Sprint("many-", MaxClients+19) {
		t.Errorf("%d clients kept, newest %q", len(all), all[0].Name)
	}
}

// A corrupt file is ignored with one warning, and replaced by the next habit learned.
func TestCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habits.json")
	os.WriteFile(path, []byte("{not json"), 0o600)
	var logs bytes.Buffer
	f := Open(path, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	f.Lookup(Key{Name: "a", Version: "1"})
	f.Lookup(Key{Name: "a", Version: "1"})
	if n := strings.Count(logs.String(), "clients' habits not valid"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
	if err := f.Learn(context.Background(), Key{Name: "a", Version: "1"}, true, false); err != nil {
		t.Fatal(err)
	}
	if c, ok := f.Lookup(Key{Name: "a", Version: "1"}); !ok || !c.Relists {
		t.Errorf("after learning anew: %+v %v", c, ok)
	}
}

// One person of a shared service cannot push the others' clients out: at most MaxPerUser of
// theirs are kept. A version that no JSON can keep as it is still finds its record.
func TestBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "habits.json")
	ctx := context.Background()
	f := Open(path, nil, nil)
	if err := f.Learn(ctx, Key{Name: "ann's agent", Version: "1", User: "ann"}, true, false); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		later := Open(path, nil, func() time.Time { return time.Now().Add(time.Duration(i+1) * 24 * time.Hour) })
		later.Learn(ctx, Key{Name: fmt.Sprint("mallory-", i), Version: "1", User: "mallory"}, false, false)
	}
	mallory := 0
	for _, c := range f.All() {
		if c.User == "mallory" {
			mallory++
		}
	}
	if _, ok := f.Lookup(Key{Name: "ann's agent", Version: "1", User: "ann"}); !ok || mallory != MaxPerUser {
		t.Errorf("ann's client kept: %v; mallory's: %d", ok, mallory)
	}
	odd := Key{Name: "odd\xff", Version: strings.Repeat("é", 30) + "\xfe.1"}
	for range 3 {
		f.Learn(ctx, odd, false, false)
	}
	if _, ok := f.Lookup(odd); !ok || len(f.All()) != MaxPerUser+2 {
		t.Errorf("an odd name: found %v, %d clients", ok, len(f.All()))
	}
}
