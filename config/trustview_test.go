package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAllServers: what an approval shows is every server the file can start, in any folder,
// once each, whether or not ForProject added one project's to Servers.
func TestAllServers(t *testing.T) {
	cfg, err := Parse("t", []byte("mcpServers:\n  a: {command: a}\nprojects:\n  /p:\n    mcpServers:\n      b: {command: b}\n  /q:\n    mcpServers:\n      c: {url: https://c.example/mcp}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Config{cfg, cfg.ForProject("/p")} {
		var got []string
		for _, s := range c.AllServers() {
			got = append(got, s.Name)
		}
		if strings.Join(got, " ") != "a b c" {
			t.Errorf("AllServers (project %q) = %v, want a b c", c.Project, got)
		}
	}
}

// TestReadRegular: a file nobody named is read only if it is a regular file; a device is
// refused rather than read up to the size bound.
func TestReadRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "toolsift.yaml")
	if err := os.WriteFile(p, []byte("mcpServers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadRegular(p); err != nil || string(data) != "mcpServers: {}\n" {
		t.Errorf("ReadRegular(regular) = %q, %v", data, err)
	}
	if _, err := os.Stat(os.DevNull); err == nil {
		if _, err := ReadRegular(os.DevNull); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadRegular(%s) = %v, want not a regular file", os.DevNull, err)
		}
	}
}
