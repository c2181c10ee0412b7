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
	"strings"

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
	first    bool  // no handover was recorded before: Old is the original
	doc      *jdoc // Old parsed; nil if the file does not exist
}

// handoverRecord is what the state folder keeps of a handover.
type handoverRecord struct {
	File    string   `json:"file"`
	Existed bool     `json:"existed"`
	Added   []string `json:"added"` // the names setup added to disabledMcpjsonServers
	// Created says setup wrote the disabledMcpjsonServers key itself.
	Created bool `json:"created,omitempty"`
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
	if _, had := settings["disabledMcpjsonServers"]; !had && h.first {
		h.rec.Created = true
	}
	h.New, err = h.addNames()
	return h, err
}

// addNames writes h.Names into disabledMcpjsonServers of the file as it is, changing only
// that array: the user's comments, numbers, key order and escapes stay byte for byte.
func (h *Handover) addNames() ([]byte, error) {
	quoted := make([]string, len(h.Names))
	for i, n := range h.Names {
		quoted[i] = jsonString(n)
	}
	if h.doc == nil {
		return []byte("{\n  \"disabledMcpjsonServers\": [" + strings.Join(quoted, ", ") + "]\n}\n"), nil
	}
	root := h.doc.root
	list := root.get("disabledMcpjsonServers")
	switch {
	case list == nil:
		e := newLayout(h.Old).setPath(root, []string{"disabledMcpjsonServers"}, func(string) string {
			return "[" + strings.Join(quoted, ", ") + "]"
		})
		return applyEdits(h.Old, []edit{e}), nil
	case list.kind != jArray:
		return nil, fmt.Errorf("%s: disabledMcpjsonServers is %s, not a list of names: fix it, then run setup again", h.File, list.kind)
	case len(list.elems) == 0:
		return applyEdits(h.Old, []edit{{list.start, list.end, "[" + strings.Join(quoted, ", ") + "]"}}), nil
	}
	last := list.elems[len(list.elems)-1]
	return applyEdits(h.Old, []edit{{last.end, last.end, ", " + strings.Join(quoted, ", ")}}), nil
}

// removeNames takes names out of disabledMcpjsonServers of the file as it is, changing
// only that array, and the key too if setup created it and nothing else is left in it.
func (h *Handover) removeNames(names []string, created bool) []byte {
	if h.doc == nil {
		return nil
	}
	root := h.doc.root
	var member *jmember
	for i := range root.members {
		if root.members[i].key == "disabledMcpjsonServers" {
			member = &root.members[i]
		}
	}
	if member == nil || member.value.kind != jArray {
		return h.Old
	}
	elems := member.value.elems
	drop := func(e *jnode) bool { return e.kind == jString && slices.Contains(names, e.text) }
	kept := slices.IndexFunc(elems, func(e *jnode) bool { return !drop(e) })
	if kept < 0 {
		if created && len(root.members) == 1 {
			return nil // setup made the file for this alone
		}
		if created {
			return applyEdits(h.Old, []edit{removeMember(root, member)})
		}
		return applyEdits(h.Old, []edit{{member.value.start, member.value.end, "[]"}})
	}
	var edits []edit
	if kept > 0 {
		edits = append(edits, edit{elems[0].start, elems[kept].start, ""})
	}
	for i := kept + 1; i < len(elems); i++ {
		if drop(elems[i]) {
			edits = append(edits, edit{elems[i-1].end, elems[i].end, ""})
		}
	}
	return applyEdits(h.Old, edits)
}

// removeMember is the edit that takes m, and the comma that joins it, out of obj.
func removeMember(obj *jnode, m *jmember) edit {
	i := slices.IndexFunc(obj.members, func(o jmember) bool { return o.keyStart == m.keyStart })
	switch {
	case i > 0:
		return edit{obj.members[i-1].value.end, m.value.end, ""}
	case i+1 < len(obj.members):
		return edit{m.keyStart, obj.members[i+1].keyStart, ""}
	}
	return edit{m.keyStart, m.value.end, ""}
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
	if _, err := h.read(); err != nil {
		return nil, err
	}
	h.Names = rec.Added
	backup, _ := os.ReadFile(filepath.Join(h.dir, "backup"))
	written, werr := os.ReadFile(filepath.Join(h.dir, "written"))
	switch {
	case werr == nil && bytes.Equal(written, h.Old) && !rec.Existed:
		h.New = nil // setup made the file, and nothing changed it since
	case werr == nil && bytes.Equal(written, h.Old) && backup != nil:
		h.New = backup // nothing else changed: byte for byte
	default:
		// The user changed the file since: only setup's names come out.
		h.New = h.removeNames(rec.Added, rec.Created || !rec.Existed)
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
		// What setup wrote: an undo that finds the file so puts the original back whole.
		if err := atomicfile.Write(filepath.Join(h.dir, "written"), h.New, 0o600); err != nil {
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
	h.doc = doc
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
