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
	"github.com/toolsift/toolsift/internal/atomicfile"
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
	return filepath.Join(dir, sanitized(srv.Name)+"-"+cacheKey(srv)+".json")
}

// loadCache reads the entry in dir for srv's current launch configuration; when there is
// none, the error satisfies os.IsNotExist.
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
	if err := atomicfile.Write(cachePath(dir, srv), data, 0o600); err != nil {
		return err
	}
	pruneCache(dir, srv, time.Now())
	return nil
}

// staleAfter is how long an entry of a server's other launch configurations is kept. A
// rotated token or a changed argument makes a new entry and leaves the old one unused; one
// still in use, by another configuration that names a server alike, is written at each of
// its connections and stays fresh.
const staleAfter = 7 * 24 * time.Hour

// pruneCache removes, beside srv's new entry, the entries of srv's name for other launch
// configurations that no one has written for staleAfter.
func pruneCache(dir string, srv config.Server, now time.Time) {
	current := filepath.Base(cachePath(dir, srv))
	prefix := sanitized(srv.Name) + "-"
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		name := f.Name()
		if name == current || !isCacheEntryOf(name, prefix) {
			continue
		}
		if info, err := f.Info(); err == nil && now.Sub(info.ModTime()) > staleAfter {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// isCacheEntryOf reports whether a file name is an entry of the server whose names start
// with prefix: the prefix, 16 hexadecimal digits of cacheKey, and .json. Another server's
// name may begin with this one's ("git" and "git-lab").
func isCacheEntryOf(name, prefix string) bool {
	key, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	key, ok = strings.CutSuffix(key, ".json")
	if !ok || len(key) != 16 {
		return false
	}
	_, err := hex.DecodeString(key)
	return err == nil
}

// loadCached fills the server's lists from the cache, if it has the server's current launch
// configuration, and lets searches go ahead without waiting for the server. It runs in
// NewPool, before anything else can see the server, so it takes no lock.
func (s *server) loadCached() {
	e, err := loadCache(s.shared.cacheDir, s.cfg)
	if err != nil {
		if !os.IsNotExist(err) {
			s.log.Warn("catalog cache unreadable", "error", err)
		}
		return
	}
	s.part = part{tools: s.toolsFrom(e.Tools), prompts: s.promptsFrom(e.Prompts), resources: e.Resources}
	s.info, s.summary, s.cached = e.Info, s.checkedSummary(e.Info.Summary), e.Saved
	s.attemptedOnce.Do(func() { close(s.attempted) })
	s.log.Debug("catalog from cache", "tools", len(s.part.tools), "saved", e.Saved)
}

// save replaces the server's cache entry with what it just listed.
func (s *server) save(info Info, tools []json.RawMessage, prompts []Prompt, resources []Resource) {
	if s.shared.cacheDir == "" {
		return
	}
	e := &cacheEntry{Server: s.cfg.Name, Saved: time.Now().UTC(), Info: info, Tools: tools, Resources: resources}
	for _, pr := range prompts {
		e.Prompts = append(e.Prompts, pr.Raw)
	}
	if err := saveCache(s.shared.cacheDir, s.cfg, e); err != nil {
		s.log.Warn("catalog cache not written", "error", err)
		return
	}
	s.mu.Lock()
	s.cached = e.Saved
	s.mu.Unlock()
}
