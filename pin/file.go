package pin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/toolsift/toolsift/internal/atomicfile"
	"github.com/toolsift/toolsift/internal/filelock"
)

// File is a Store in the state folder, shared by every toolsift process of the user under a
// file lock: the entries in pins.json, the definitions apart beside it.
type File struct{ path string }

// NewFile returns the store at path.
func NewFile(path string) *File { return &File{path: path} }

// Path is the file's path.
func (f *File) Path() string { return f.path }

// fileFormat is the file: entries sorted by key.
type fileFormat struct {
	Tools []Entry `json:"tools"`
}

func (f *File) Load(ctx context.Context) (map[Key]Entry, string, error) {
	entries, err := f.read()
	if err != nil {
		return nil, "", err
	}
	v, err := f.Version(ctx)
	return entries, v, err
}

func (f *File) read() (map[Key]Entry, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[Key]Entry{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading pinned tools: %w", err)
	}
	entries, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s is not valid (%v): move it aside, and toolsift pins every tool again as it sees it", f.path, err)
	}
	return entries, nil
}

// Decode reads entries as Encode wrote them.
func Decode(data []byte) (map[Key]Entry, error) {
	var ff fileFormat
	if err := json.Unmarshal(data, &ff); err != nil {
		return nil, err
	}
	entries := make(map[Key]Entry, len(ff.Tools))
	for _, e := range ff.Tools {
		entries[e.Key] = e
	}
	return entries, nil
}

// Encode writes entries as JSON, sorted by key, so that a diff of two versions reads.
func Encode(entries map[Key]Entry) ([]byte, error) {
	ff := fileFormat{Tools: make([]Entry, 0, len(entries))}
	for _, e := range entries {
		ff.Tools = append(ff.Tools, e)
	}
	slices.SortFunc(ff.Tools, func(a, b Entry) int {
		return strings.Compare(a.Server+"\x00"+a.Tool, b.Server+"\x00"+b.Tool)
	})
	// One entry a line: compact, since the whole file is read at every start, and a diff of
	// two versions still reads by tool.
	var b bytes.Buffer
	b.WriteString("{\"tools\": [\n")
	for i, e := range ff.Tools {
		line, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		b.Write(line)
		if i < len(ff.Tools)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	return b.Bytes(), nil
}

func (f *File) Update(ctx context.Context, fn func(map[Key]Entry) error) (map[Key]Entry, string, error) {
	release, err := filelock.Acquire(ctx, f.path+".lock")
	if err != nil {
		return nil, "", err
	}
	defer release()
	entries, err := f.read()
	if err != nil {
		return nil, "", err
	}
	if err := fn(entries); err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return nil, "", fmt.Errorf("recording pinned tools: %w", err)
	}
	if added := Apart(entries); len(added) > 0 {
		// Before the entries that name them.
		if err := f.keep(added, Referenced(entries)); err != nil {
			return nil, "", err
		}
	}
	data, err := Encode(entries)
	if err != nil {
		return nil, "", err
	}
	if err := atomicfile.Write(f.path, data, 0o600); err != nil {
		return nil, "", err
	}
	// Still under the lock: nobody else wrote since.
	v, err := f.Version(ctx)
	return entries, v, err
}

// definitionsPath is where the definitions are: pins.definitions.json beside pins.json.
func (f *File) definitionsPath() string {
	return strings.TrimSuffix(f.path, filepath.Ext(f.path)) + ".definitions.json"
}

func (f *File) Definitions(context.Context) (map[string]Definition, error) {
	data, err := os.ReadFile(f.definitionsPath())
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Definition{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading pinned tools' definitions: %w", err)
	}
	defs := map[string]Definition{}
	if err := json.Unmarshal(data, &defs); err != nil {
		return nil, fmt.Errorf("%s is not valid (%v): move it aside; reviews then show no earlier version", f.definitionsPath(), err)
	}
	return defs, nil
}

// keep adds the definitions added to those kept, and drops those no entry uses.
func (f *File) keep(added map[string]Definition, used func(digest string) bool) error {
	defs, err := f.Definitions(context.Background())
	if err != nil {
		return err
	}
	maps.Copy(defs, added)
	maps.DeleteFunc(defs, func(d string, _ Definition) bool { return !used(d) })
	// One definition a line, by digest (encoding/json sorts the keys).
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, d := range slices.Sorted(maps.Keys(defs)) {
		key, _ := json.Marshal(d)
		def, err := json.Marshal(defs[d])
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString(",\n")
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(def)
	}
	b.WriteString("\n}\n")
	return atomicfile.Write(f.definitionsPath(), b.Bytes(), 0o600)
}

// Version is the file's size and modification time: every write replaces it whole.
func (f *File) Version(context.Context) (string, error) {
	fi, err := os.Stat(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading pinned tools: %w", err)
	}
	return strconv.FormatInt(fi.Size(), 10) + "@" + strconv.FormatInt(fi.ModTime().UnixNano(), 10), nil
}
