package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/toolsift/toolsift/internal/atomicfile"
	"github.com/toolsift/toolsift/internal/dirs"
	"github.com/toolsift/toolsift/internal/filelock"
)

// removals remembers the servers toolsift remove took out of each configuration, so that an
// import --merge that brings one back (a client still lists it) says so instead of undoing
// the user's remove in silence. It lives in the state folder; a record that cannot be read
// is no record.
type removals map[string][]removal // by configuration file, absolute

type removal struct {
	Name string    `json:"name"` // as MergeServers names it: "pg of project /dir" for a project's
	At   time.Time `json:"at"`
}

// keptRemovals bounds the record of each file: the oldest are forgotten first.
const keptRemovals = 100

func removalsFile() (string, error) {
	state, err := dirs.State()
	if err != nil {
		return "", err
	}
	return filepath.Join(state, "removed.json"), nil
}

// updateRemovals changes the record under its lock.
func updateRemovals(ctx context.Context, change func(removals)) error {
	file, err := removalsFile()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	release, err := filelock.Acquire(ctx, file+".lock")
	if err != nil {
		return err
	}
	defer release()
	r := removals{}
	if data, err := os.ReadFile(file); err == nil {
		_ = json.Unmarshal(data, &r) // a damaged record is started afresh
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	change(r)
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(file, data, 0o600)
}

// noteRemoved records that name was taken out of config.
func noteRemoved(ctx context.Context, config, name string) error {
	config, _ = filepath.Abs(config)
	return updateRemovals(ctx, func(r removals) {
		list := slices.DeleteFunc(r[config], func(x removal) bool { return x.Name == name })
		list = append(list, removal{Name: name, At: time.Now()})
		r[config] = list[max(0, len(list)-keptRemovals):]
	})
}

// takeRemoved returns those of names that were removed from config, and forgets them: they
// are back.
func takeRemoved(ctx context.Context, config string, names []string) (back []removal) {
	config, _ = filepath.Abs(config)
	_ = updateRemovals(ctx, func(r removals) {
		r[config] = slices.DeleteFunc(r[config], func(x removal) bool {
			if slices.Contains(names, x.Name) {
				back = append(back, x)
				return true
			}
			return false
		})
		if len(r[config]) == 0 {
			delete(r, config)
		}
	})
	return back
}
