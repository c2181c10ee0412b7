package clients

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/internal/atomicfile"
)

// Setup keeps what it needs to switch a client back in toolsift's state folder, never
// beside the client's file (which may be in a repository), one folder per file:
//
//	setup/<name>-<hash of the file's path>/backup       the file as it was before setup
//	setup/<name>-<hash of the file's path>/record.json  the record below
//
// The record says what the backup must be (its size and SHA-256), so that a backup cut
// short by a crash is recognised and never restored, and lists every server setup moved out
// of the file, on every run: a server added to the client after a first setup and moved by
// a second is in no backup, and undo still puts it back.
type record struct {
	File string `json:"file"`
	Kind Kind   `json:"kind"`
	// Backup describes the backup; nil when the file did not exist before setup.
	Backup *digest       `json:"backup,omitempty"`
	Moved  []movedServer `json:"moved"`
}

type digest struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

func digestOf(data []byte) *digest {
	sum := sha256.Sum256(data)
	return &digest{Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
}

func (d *digest) matches(data []byte) bool {
	return d != nil && *d == *digestOf(data)
}

// movedServer is one entry setup took out of a client file.
type movedServer struct {
	// Path are the keys of its servers block; Key its name there; Raw its text, key included.
	Path  []string `json:"path"`
	Key   string   `json:"key"`
	Scope string   `json:"scope,omitempty"`
	Raw   string   `json:"raw"`
	// Name is its name in toolsift's configuration.
	Name string `json:"name"`
}

// setupState is what the state folder holds for one client file, as read.
type setupState struct {
	dir    string  // the file's folder in the state folder; "" without a state folder
	rec    *record // nil if there is none
	recRaw []byte  // the record's bytes, to put back if a write is refused
	// backup is the verified content of the backup: the state folder's, or a legacy one
	// beside the file; nil if there is none or it is damaged.
	backup []byte
	// legacy is the path of a backup an earlier version left beside the file, if any.
	legacy string
	// problems say what was ignored, and why.
	problems []string
}

// stateDir is where the state of the client file path is kept.
func stateDir(state, path string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(path)))
	name := strings.TrimLeft(filepath.Base(path), ".")
	return filepath.Join(state, "setup", sanitize(name)+"-"+hex.EncodeToString(sum[:6]))
}

// BackupPath is where setup keeps the backup of the client file path, given toolsift's
// state folder.
func BackupPath(state, path string) string { return filepath.Join(stateDir(state, path), "backup") }

// readState reads what the state folder, and an earlier version's backup beside the file,
// hold for path.
func readState(state, path string, kind Kind, opts Options) (*setupState, error) {
	st := &setupState{}
	if state != "" {
		st.dir = stateDir(state, path)
		raw, err := os.ReadFile(filepath.Join(st.dir, "record.json"))
		switch {
		case err == nil:
			var r record
			if err := json.Unmarshal(raw, &r); err != nil {
				st.problems = append(st.problems, fmt.Sprintf("setup's record %s is damaged (%v): it is ignored", filepath.Join(st.dir, "record.json"), err))
				break
			}
			st.rec, st.recRaw = &r, raw
			if r.Backup != nil {
				bak, err := os.ReadFile(filepath.Join(st.dir, "backup"))
				switch {
				case err == nil && r.Backup.matches(bak):
					st.backup = bak
				case err == nil:
					st.problems = append(st.problems, fmt.Sprintf("the backup %s is incomplete or damaged (%d bytes, %d expected; a setup stopped while writing it?): it is ignored, and the servers setup moved are put back from its record",
						filepath.Join(st.dir, "backup"), len(bak), r.Backup.Size))
				default:
					st.problems = append(st.problems, fmt.Sprintf("the backup %s is missing: the servers setup moved are put back from its record", filepath.Join(st.dir, "backup")))
				}
			}
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("reading setup's record of %s: %w", path, err)
		}
	}
	legacy := path + legacySuffix
	if bak, err := os.ReadFile(legacy); err == nil {
		st.legacy = legacy
		if st.backup == nil {
			// No digest was kept for these: a backup that does not parse is one cut short.
			if _, err := parseFile(path, bak, kind, opts); err != nil {
				st.problems = append(st.problems, fmt.Sprintf("the backup %s, from an earlier version of toolsift, is incomplete or damaged (%v): it is ignored; delete it once you have looked", legacy, err))
				st.legacy = ""
			} else {
				st.backup = bak
			}
		}
	}
	return st, nil
}

// has reports whether the state holds a setup of the file: a record or a usable backup.
func (st *setupState) has() bool { return st.rec != nil || st.backup != nil }

// extras are the servers setup moved that the backup does not hold: those of later runs.
func (st *setupState) extras(bak *file) []movedServer {
	if st.rec == nil {
		return nil
	}
	var out []movedServer
	for _, m := range st.rec.Moved {
		if bak != nil {
			if b := bak.block(m.Path); b != nil && slices.ContainsFunc(b.entries, func(e entryRef) bool { return e.key == m.Key }) {
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// legacySuffix is added to a client file's name for the backup versions of toolsift before
// the state folder kept beside it.
const legacySuffix = ".toolsift-backup"

// writeBackup writes the backup of a file's content atomically and reads it back: setup
// writes nothing more unless the backup is whole.
func (st *setupState) writeBackup(data []byte) error {
	p := filepath.Join(st.dir, "backup")
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		return fmt.Errorf("writing the backup: %w", err)
	}
	if err := atomicfile.Write(p, data, 0o600); err != nil {
		return fmt.Errorf("writing the backup: %w", err)
	}
	back, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(back, data) {
		return fmt.Errorf("writing the backup %s: it does not read back as written (%v); nothing else written", p, err)
	}
	return nil
}

// writeRecord replaces the record.
func (st *setupState) writeRecord(r *record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		return fmt.Errorf("writing setup's record: %w", err)
	}
	return atomicfile.Write(filepath.Join(st.dir, "record.json"), append(data, '\n'), 0o600)
}

// restore puts the record back as it was read, after a write that was refused: a backup
// written for it is removed with it.
func (st *setupState) restore(wroteBackup bool) {
	if wroteBackup {
		os.Remove(filepath.Join(st.dir, "backup"))
	}
	if st.recRaw != nil {
		_ = atomicfile.Write(filepath.Join(st.dir, "record.json"), st.recRaw, 0o600)
	} else {
		os.Remove(filepath.Join(st.dir, "record.json"))
		os.Remove(st.dir)
	}
}

// remove forgets the setup of the file: after an undo.
func (st *setupState) remove() error {
	var errs []error
	if st.dir != "" {
		for _, name := range []string{"backup", "record.json"} {
			if err := os.Remove(filepath.Join(st.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		if err := os.Remove(st.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if st.legacy != "" {
		if err := os.Remove(st.legacy); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing the backup: %w", errors.Join(errs...))
	}
	return nil
}

// ReadBeforeSetup reads one client file as it was before setup switched it to toolsift: the
// servers setup moved out are read back from its backup and record, as undo would put them
// back, with those added to the file since. switched reports whether there was a setup to
// look through; without one, or without opts.State, it is Read.
func ReadBeforeSetup(path string, kind Kind, opts Options) (imp Import, switched bool, err error) {
	if opts.State != "" {
		if c, err := PlanUndo(path, kind, opts); err == nil && c.state.has() {
			imp, err := Parse(path, c.New, c.Kind, opts)
			return imp, true, err
		}
	}
	imp, err = Read(path, kind, opts)
	return imp, false, err
}
