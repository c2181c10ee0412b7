package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/dirs"
	"github.com/toolsift/toolsift/internal/trust"
)

// editableConfig returns the configuration add changes: the one toolsift serves, or,
// where there is none, the user's own (made by the edit).
func editableConfig(named string, stderr io.Writer) (string, error) {
	file, err := findConfig(named, warnTo(stderr))
	if err != nil && named == "" {
		if _, statErr := os.Stat(userConfig()); errors.Is(statErr, fs.ErrNotExist) {
			return userConfig(), nil
		}
	}
	return file, err
}

// editConfig changes the configuration file through config.Edit (locked, re-read, written
// whole), once the change loads. A folder's configuration the user had approved stays
// approved: the change is theirs.
func editConfig(ctx context.Context, file string, change func(old []byte) ([]byte, error)) error {
	return config.Edit(ctx, file, func(old []byte) ([]byte, error) {
		out, err := change(old)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if _, err := config.Parse(file, out, nil); err != nil {
			return nil, fmt.Errorf("the change would make %s invalid, so it was not written: %w", file, err)
		}
		if dir, err := dirs.State(); err == nil && old != nil {
			// Recorded before the write, under the lock: an approval of bytes that were
			// never written approves nothing.
			s := trust.Open(dir)
			if trusted, _ := s.Trusted(file, old); trusted {
				if err := s.Trust(file, out, time.Now()); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	})
}

// pairs splits each of kvs at sep into a map; flag and example say how to write one.
func pairs(kvs []string, sep, flag, example string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: %s %q: write it as %s %s", errUsage, flag, kv, flag, example)
		}
		m[k] = strings.TrimSpace(v)
	}
	return m, nil
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// configLine names the configuration read, the project whose servers it added, and how many
// servers are served.
func configLine(cfg *config.Config) string {
	line := "config: " + absPath(cfg.File)
	if cfg.Project != "" {
		line += ", with the servers of project " + cfg.Project
	}
	return line + " (" + plural(len(cfg.Servers), "server") + ")"
}
