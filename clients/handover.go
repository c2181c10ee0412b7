package clients

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/toolsift/toolsift/internal/atomicfile"
)

// A project's .mcp.json is the team's: setup never rewrites it. Once toolsift serves its
// servers in that project (from the configuration's projects section), Claude Code must not
// start them too, and it is told so for this user only: their names go into
// disabledMcpjsonServers of the project's .claude/settings.local.json, Claude Code's
// settings file for one user in one project, which it keeps out of git. The file as it was
// is kept in toolsift's state folder, and the undo puts it back.

// Handover is the change to a project's .claude/settings.local.json, worked out before
// anything is written; Apply writes it.
type Handover struct {
	// File is the settings file; Names the servers whose start is handed to toolsift (setup)
	// or back to Claude Code (undo).
	File  string
	Names []string
	// Old is the file as read, nil if it does not exist; New what Apply writes, nil to
	// delete the file.
	Old, New []byte
	undo     bool
	dir      string // the state folder's for File
	rec      handoverRecord
	first    bool // no handover was recorded before: Old is the original
}

// handoverRecord is what the state folder keeps of a handover.
type handoverRecord struct {
	File    string   `json:"file"`
	Existed bool     `json:"existed"`
	Added   []string `json:"added"` // the names setup added to disabledMcpjsonServers
}

// SettingsFile is Claude Code's settings file for one user in project.
func SettingsFile(project string) string {
	return filepath.Join(project, ".claude", "settings.local.json")
}

// PlanHandover works out how to keep Claude Code from starting the .mcp.json servers names
// of project, which toolsift serves there. Names already disabled are left as they are.
func PlanHandover(project string, names []string, state string) (*Handover, error) {
	if state == "" {
		return nil, errors.New("no state folder to keep the settings file's original in")
	}
	h := &Handover{File: SettingsFile(project), dir: stateDir(state, SettingsFile(project))}
	settings, err := h.read()
	if err != nil {
		return nil, err
	}
	disabled := stringList(settings["disabledMcpjsonServers"])
	h.rec = handoverRecord{File: h.File, Existed: h.Old != nil}
	switch prev, err := readHandover(h.dir); {
	case err == nil:
		h.rec = prev // a second setup: the original is the first's
	case errors.Is(err, fs.ErrNotExist):
		h.first = true
	default:
		return nil, err
	}
	for _, n := range names {
		if !slices.Contains(disabled, n) {
			disabled = append(disabled, n)
			h.rec.Added = append(h.rec.Added, n)
			h.Names = append(h.Names, n)
		}
	}
	if len(h.Names) == 0 {
		return h, nil
	}
	settings["disabledMcpjsonServers"] = disabled
	h.New, err = encodeSettings(settings)
	return h, err
}

// PlanTakeBack works out the undo of the handovers in project: the settings file as it was,
// if nothing else changed it since, else without the names setup added. It returns nil if
// setup handed nothing over there.
func PlanTakeBack(project, state string) (*Handover, error) {
	if state == "" {
		return nil, nil
	}
	h := &Handover{File: SettingsFile(project), dir: stateDir(state, SettingsFile(project)), undo: true}
	rec, err := readHandover(h.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	settings, err := h.read()
	if err != nil {
		return nil, err
	}
	h.Names = rec.Added
	disabled := slices.DeleteFunc(stringList(settings["disabledMcpjsonServers"]), func(n string) bool { return slices.Contains(rec.Added, n) })
	backup, _ := os.ReadFile(filepath.Join(h.dir, "backup"))
	switch {
	case !rec.Existed && len(disabled) == 0 && len(settings) == 1:
		h.New = nil // setup made the file for this alone
	case rec.Existed && backup != nil && sameSettings(backup, settings, disabled):
		h.New = backup // nothing else changed: byte for byte
	default:
		settings["disabledMcpjsonServers"] = disabled
		if h.New, err = encodeSettings(settings); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Apply writes the change: for a handover, the original and the record to the state folder
// first; an undo then forgets them.
func (h *Handover) Apply() error {
	if !h.undo && len(h.Names) == 0 {
		return nil
	}
	if !h.undo {
		if err := os.MkdirAll(h.dir, 0o700); err != nil {
			return err
		}
		if h.first && h.Old != nil {
			if err := atomicfile.Write(filepath.Join(h.dir, "backup"), h.Old, 0o600); err != nil {
				return err
			}
		}
		raw, err := json.MarshalIndent(h.rec, "", "  ")
		if err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(h.dir, "handover.json"), raw, 0o600); err != nil {
			return err
		}
	}
	if h.New == nil {
		if err := os.Remove(h.File); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(h.File), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if st, err := os.Stat(h.File); err == nil {
			mode = st.Mode().Perm()
		}
		if err := atomicfile.Write(h.File, h.New, mode); err != nil {
			return err
		}
	}
	if h.undo {
		return os.RemoveAll(h.dir)
	}
	return nil
}

// Handovers returns the projects setup handed servers over in, from its records in the
// state folder.
func Handovers(state string) []string {
	recs, _ := filepath.Glob(filepath.Join(state, "setup", "*", "handover.json"))
	var projects []string
	for _, r := range recs {
		if rec, err := readHandover(filepath.Dir(r)); err == nil && rec.File != "" {
			projects = append(projects, filepath.Dir(filepath.Dir(rec.File)))
		}
	}
	slices.Sort(projects)
	return projects
}

// read reads the settings file into h.Old and returns its object.
func (h *Handover) read() (map[string]any, error) {
	data, err := os.ReadFile(h.File)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	h.Old = data
	doc, err := parseJSONC(h.File, data)
	if err != nil {
		return nil, fmt.Errorf("%w: fix it, then run setup again", err)
	}
	settings, ok := doc.root.value().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON object: fix it, then run setup again", h.File)
	}
	return settings, nil
}

func readHandover(dir string) (handoverRecord, error) {
	var rec handoverRecord
	raw, err := os.ReadFile(filepath.Join(dir, "handover.json"))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, fmt.Errorf("setup's record %s is damaged: %w", filepath.Join(dir, "handover.json"), err)
	}
	return rec, nil
}

// sameSettings reports whether the backup's settings are settings with disabled as its
// disabledMcpjsonServers: whether only setup's names changed since.
func sameSettings(backup []byte, settings map[string]any, disabled []string) bool {
	doc, err := parseJSONC("", backup)
	if err != nil {
		return false
	}
	was, ok := doc.root.value().(map[string]any)
	if !ok {
		return false
	}
	now := map[string]any{}
	for k, v := range settings {
		now[k] = v
	}
	if _, had := was["disabledMcpjsonServers"]; had || len(disabled) > 0 {
		now["disabledMcpjsonServers"] = append([]string{}, disabled...) // [] rather than null
	} else {
		delete(now, "disabledMcpjsonServers")
	}
	a, _ := json.Marshal(was)
	b, _ := json.Marshal(now)
	return bytes.Equal(a, b)
}

func stringList(v any) []string {
	var out []string
	if list, ok := v.([]any); ok {
		for _, e := range list {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func encodeSettings(settings map[string]any) ([]byte, error) {
	out, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
