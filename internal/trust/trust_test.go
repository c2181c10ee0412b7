package trust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTrust(t *testing.T) {
	dir := t.TempDir()
	s := Open(filepath.Join(dir, "state"))
	cfg := filepath.Join(dir, "repo", "toolsift.yaml")
	orig := []byte("mcpServers: {a: {command: x}}\n")
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)

	check := func(what string, path string, data []byte, want bool) {
		t.Helper()
		got, err := s.Trusted(path, data)
		if err != nil || got != want {
			t.Errorf("%s: Trusted = %v, %v; want %v", what, got, err, want)
		}
	}
	check("before any approval", cfg, orig, false)
	if err := s.Trust(cfg, orig, now); err != nil {
		t.Fatal(err)
	}
	check("approved", cfg, orig, true)
	check("the same path written another way", filepath.Join(dir, "repo", ".", "toolsift.yaml"), orig, true)
	check("one byte edited", cfg, []byte("mcpServers: {a: {command: y}}\n"), false)
	check("the same content elsewhere", filepath.Join(dir, "other", "toolsift.yaml"), orig, false)
	check("empty content", cfg, nil, false)

	if forgot, err := s.Forget(cfg); err != nil || !forgot {
		t.Fatalf("Forget = %v, %v; want true", forgot, err)
	}
	check("forgotten", cfg, orig, false)
	if forgot, err := s.Forget(cfg); err != nil || forgot {
		t.Errorf("second Forget = %v, %v; want false", forgot, err)
	}
	st, err := os.Stat(filepath.Join(dir, "state"))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("state folder: %v, mode %v; want 0700", err, st.Mode().Perm())
	}
}

func TestDamagedStore(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, fileName), []byte(`{"files": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := Open(dir)
	if _, err := s.Trusted("x", nil); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Errorf("Trusted on a damaged store: %v; want an error that says to delete it", err)
	}
	if err := s.Trust("x", nil, time.Now()); err == nil {
		t.Error("Trust over a damaged store succeeded: it would withdraw every other approval")
	}
	if data, _ := os.ReadFile(filepath.Join(dir, fileName)); string(data) != `{"files": {` {
		t.Errorf("the damaged store was changed to %q", data)
	}
}
