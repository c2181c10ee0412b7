// Package dirs names the folders toolsift keeps its own files in, outside any project: the
// state that must survive (setup's backups and records, approvals, sign-ins) and the caches
// that may be thrown away.
package dirs

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// State is the folder for state toolsift must not lose: $XDG_STATE_HOME/toolsift, else
// ~/.local/state/toolsift on Linux and the BSDs, the user's configuration folder (such as
// ~/Library/Application Support/toolsift or %AppData%\toolsift) elsewhere. It is never
// inside a project, so nothing toolsift keeps there is committed by mistake.
func State() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "toolsift"), nil
	}
	switch runtime.GOOS {
	case "darwin", "windows", "ios", "plan9":
		dir, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, "toolsift"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	if home == "" {
		return "", errors.New("no home directory: set HOME or XDG_STATE_HOME")
	}
	return filepath.Join(home, ".local", "state", "toolsift"), nil
}

// Cache is the folder for what can be rebuilt (catalogs, tool vectors): $XDG_CACHE_HOME/toolsift
// or the platform's user cache folder; empty when there is none.
func Cache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "toolsift")
}
