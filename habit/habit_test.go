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
	for v, want := range map[string]string{"1.2.3": "1", "v2.0": "2", "10": "10", "": "", " 3.1 ": "3", "2026.8.31": "2026", strings.Repeat("9", 40): strings.Repeat("9", 20)} {
		if got := Major(v); got != want {
			t.Errorf("Major(%q) = %q, want %q", v, got, want)
		}
	}
}

func TestLearnAndLookup(t *testing.T) {
	day := time.Date(2026, 12, 6, 9, 30, 0, 0, time.UTC)
	f := Open(filepath.Join(t.TempDir(), "habits.json"), nil, func() time.Time { return day })
	ctx := context.Background()
	if _, ok := f.Lookup("agent", "1.0"); ok {
		t.Fatal("found before learning")
	}
	if err := f.Learn(ctx, "agent", "1.0", false, false, false); err != nil {
		t.Fatal(err)
	}
	c, ok := f.Lookup("agent", "1.9.2")
	if !ok || c.Relists || !c.Learned.Equal(day) {
		t.Fatalf("the same major version: %+v %v", c, ok)
	}
	if _, ok := f.Lookup("agent", "2.0"); ok {
		t.Error("a new major version is a new client")
	}
	if err := f.Learn(ctx, "cursor-vscode", "1.0.0", false, false, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Lookup("cursor-vscode", "1.0.0"); ok {
		t.Error("a known client's record is for status, not a learned habit")
	}
	before, _ := os.Stat(f.path)
	if err := f.Learn(ctx, "agent", "1.0", false, false, false); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(f.path); !after.ModTime().Equal(before.ModTime()) {
		t.Error("learning nothing new wrote the file")
	}
	// The client starts re-listing (an update): the habit changes back.
	if err := f.Learn(ctx, "agent", "1.1", true, false, false); err != nil {
		t.Fatal(err)
	}
	if c, _ := f.Lookup("agent", "1.0"); !c.Relists {
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
				if err := f.Learn(context.Background(), fmt.Sprintf("client-%d-%d", p, i), "1", i%2 == 0, false, false); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	f := Open(path, nil, nil)
	for p := range 2 {
		for i := range 30 {
			if c, ok := f.Lookup(fmt.Sprintf("client-%d-%d", p, i), "1"); !ok || c.Relists != (i%2 == 0) {
				t.Errorf("client-%d-%d: %+v %v", p, i, c, ok)
			}
		}
	}
	day := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // after the clients above
	for i := range MaxClients + 20 {
		g := Open(path, nil, func() time.Time { return day.Add(time.Duration(i) * 24 * time.Hour) })
		g.Learn(context.Background(), fmt.Sprint("many-", i), "1", false, false, false)
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
	f.Lookup("a", "1")
	f.Lookup("a", "1")
	if n := strings.Count(logs.String(), "clients' habits not read"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
	if err := f.Learn(context.Background(), "a", "1", true, false, false); err != nil {
		t.Fatal(err)
	}
	if c, ok := f.Lookup("a", "1"); !ok || !c.Relists {
		t.Errorf("after learning anew: %+v %v", c, ok)
	}
}
