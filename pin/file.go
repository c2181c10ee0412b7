package pin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// fileFormat is the file: a generation, new at each write, and the entries sorted by key.
type fileFormat struct {
	Generation string  `json:"generation"`
	Tools      []Entry `json:"tools"`
}

func (f *File) Load(context.Context) (map[Key]Entry, string, error) {
	return f.read()
}

// read returns the entries and the generation they were written with: one read of the
// file, so that the two always go together.
func (f *File) read() (map[Key]Entry, string, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[Key]Entry{}, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading pinned tools: %w", err)
	}
	entries, generation, err := decode(data)
	if err != nil {
		return nil, "", fmt.Errorf("%s is not valid (%v): move it aside, and toolsift pins every tool again as it sees it", f.path, err)
	}
	return entries, generation, nil
}

// Decode reads entries as Encode wrote them.
func Decode(data []byte) (map[Key]Entry, error) {
	entries, _, err := decode(data)
	return entries, err
}

func decode(data []byte) (map[Key]Entry, string, error) {
	var ff fileFormat
	if err := json.Unmarshal(data, &ff); err != nil {
		return nil, "", err
	}
	entries := make(map[Key]Entry, len(ff.Tools))
	for _, e := range ff.Tools {
		entries[e.Key] = e
	}
	return entries, ff.Generation, nil
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
	// The generation comes first, where Version reads it without reading the rest.
	gen := make([]byte, 8)
	rand.Read(gen)
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"generation\": %q, \"tools\": [\n", hex.EncodeToString(gen))
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
	entries, _, err := f.read()
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
	_, generation, err := decode(data)
	return entries, generation, err
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

// Version is the file's generation, read from its first line.
func (f *File) Version(context.Context) (string, error) {
	file, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading pinned tools: %w", err)
	}
	defer file.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(file, head)
	m := generationLine.FindSubmatch(head[:n])
	if m == nil {
		return "", fmt.Errorf("%s is not valid (no generation on its first line): move it aside, and toolsift pins every tool again as it sees it", f.path)
	}
	return string(m[1]), nil
}

var generationLine = regexp.MustCompile(`^\{"generation": "([0-9a-f]{16})"`)
