package embedding

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// key identifies a text: the first half of its SHA-256.
type key [16]byte

func keyOf(text string) key {
	sum := sha256.Sum256([]byte(text))
	return key(sum[:16])
}

// cache keeps tool vectors on disk, one file per vector, named by the key of the text it is
// the vector of, in a directory per API and model. A file per vector, written under a
// temporary name and renamed, because several toolsift processes share the directory (one
// per client): none sees half a vector or undoes another's, and none needs a lock. Vectors
// of texts no tool has any more stay; they are a few kilobytes each.
type cache struct {
	dir string // empty: no cache
}

// newCache returns the cache for model at the API url, under base (toolsift's cache
// directory); base empty means none.
func newCache(base, url, model string) cache {
	if base == "" {
		return cache{}
	}
	sum := sha256.Sum256([]byte(url + "\x00" + model))
	return cache{dir: filepath.Join(base, "embeddings", slug(model)+"-"+hex.EncodeToString(sum[:6]))}
}

// slug makes a model's name readable in a directory name.
func slug(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return r
		}
		return '_'
	}, s)
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// A vector file is the magic, the dimension (uint32), the values (float32), and a CRC-32
// of all that, little-endian: a torn or foreign file is found out, not read as a vector.
const magic = "TSV1"

func (c cache) path(k key) string { return filepath.Join(c.dir, hex.EncodeToString(k[:])+".vec") }

// load reads the vector of k; when there is none, the error satisfies os.IsNotExist.
func (c cache) load(k key) ([]float32, error) {
	if c.dir == "" {
		return nil, os.ErrNotExist
	}
	data, err := os.ReadFile(c.path(k))
	if err != nil {
		return nil, err
	}
	return decode(data)
}

func decode(data []byte) ([]float32, error) {
	if len(data) < 12 || string(data[:4]) != magic {
		return nil, errors.New("not a vector file")
	}
	dim := int(binary.LittleEndian.Uint32(data[4:]))
	if dim == 0 || len(data) != 12+4*dim {
		return nil, fmt.Errorf("vector file of %d bytes for %d dimensions", len(data), dim)
	}
	body := data[:len(data)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, errors.New("vector file fails its checksum")
	}
	v := make([]float32, dim)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[8+4*i:]))
	}
	if err := check(v); err != nil {
		return nil, fmt.Errorf("vector file: %w", err)
	}
	return v, nil
}

func encode(v []float32) []byte {
	data := make([]byte, 8, 12+4*len(v))
	copy(data, magic)
	binary.LittleEndian.PutUint32(data[4:], uint32(len(v)))
	for _, x := range v {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
	}
	return binary.LittleEndian.AppendUint32(data, crc32.ChecksumIEEE(data))
}

// save writes the vector of k atomically.
func (c cache) save(k key, v []float32) error {
	if c.dir == "" {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.dir, ".vec-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(encode(v)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), c.path(k))
}
