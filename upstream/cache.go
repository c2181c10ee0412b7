package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
)

// cacheEntry is what the catalog cache keeps of one server: what it listed, as it sent it.
type cacheEntry struct {
	Server    string            `json:"server"`
	Saved     time.Time         `json:"saved"`
	Info      Info              `json:"info"`
	Tools     []json.RawMessage `json:"tools"`
	Prompts   []json.RawMessage `json:"prompts,omitempty"`
	Resources []Resource        `json:"resources,omitempty"`
}

// cacheKey identifies a server's launch configuration: change the command, its arguments,
// environment, URL or headers, and the cached catalog no longer applies. Secrets in env and
// headers only enter the hash.
func cacheKey(srv config.Server) string {
	b, _ := json.Marshal([]any{srv.Type, srv.Command, srv.Args, srv.Env, srv.Cwd, srv.URL, srv.Headers})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// cachePath is where a server's entry lives in dir.
func cachePath(dir string, srv config.Server) string {
	name := strings.Map(func(r rune) rune {
		if isLegal(r) {
			return r
		}
		return '_'
	}, srv.Name)
	return filepath.Join(dir, name+"-"+cacheKey(srv)+".json")
}

func loadCache(dir string, srv config.Server) (*cacheEntry, error) {
	data, err := os.ReadFile(cachePath(dir, srv))
	if err != nil {
		return nil, err
	}
	var e cacheEntry
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("cache entry for %q: %w", srv.Name, err)
	}
	return &e, nil
}

// saveCache writes an entry atomically: a reader sees the old entry or the new, never half.
func saveCache(dir string, srv config.Server, e *cacheEntry) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".entry-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), cachePath(dir, srv))
}
