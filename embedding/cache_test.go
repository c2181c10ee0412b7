package embedding

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestCacheRoundTrip(t *testing.T) {
	c := newCache(t.TempDir(), "http://127.0.0.1:1/v1", "nomic-embed-text:v1.5")
	k := keyOf("gh create issue")
	if _, err := c.load(k); !os.IsNotExist(err) {
		t.Fatalf("load of nothing = %v, want not-exist", err)
	}
	v := unit([]float32{3, 4, 0.5})
	if err := c.save(k, v); err != nil {
		t.Fatal(err)
	}
	got, err := c.load(k)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Errorf("load = %v, %v; want %v", got, err, v)
	}
	if !strings.Contains(c.dir, "nomic-embed-text_v1.5-") {
		t.Errorf("cache directory %q does not name the model", c.dir)
	}
	if none := newCache("", "u", "m"); none.save(k, v) != nil {
		t.Error("saving to no cache failed")
	} else if _, err := none.load(k); !os.IsNotExist(err) {
		t.Errorf("no cache loads %v", err)
	}
}

func TestDecodeHostile(t *testing.T) {
	good := encode([]float32{0.6, 0.8})
	withCRC := func(b []byte) []byte {
		b = append([]byte(nil), b[:len(b)-4]...)
		return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	}
	nan := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(nan[8:], math.Float32bits(float32(math.NaN())))
	huge := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(huge[4:], 1<<30)
	zeroDim := []byte("TSV1\x00\x00\x00\x00\x00\x00\x00\x00")
	for name, data := range map[string][]byte{
		"empty": nil, "short": good[:10], "truncated": good[:len(good)-1], "longer": append(append([]byte(nil), good...), 0),
		"bad magic": append([]byte("XXXX"), good[4:]...), "bad checksum": append(good[:len(good)-1:len(good)-1], good[len(good)-1]^1),
		"NaN with a good checksum": withCRC(nan), "dimension past the file": huge, "no dimensions": zeroDim,
		"zeros": encode([]float32{0, 0}),
	} {
		if v, err := decode(data); err == nil {
			t.Errorf("decode(%s) = %v, want an error", name, v)
		}
	}
	if v, err := decode(good); err != nil || len(v) != 2 {
		t.Errorf("decode(good) = %v, %v", v, err)
	}
}

func TestText(t *testing.T) {
	d := testDocs()[0]
	d.Keywords = []string{"bug", "ticket"}
	if got, want := Text(d), "gh create issue: Create a new issue in a repository.\nKeywords: bug, ticket\nParameters: title, body"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	for name, want := range map[string]string{
		"create_issue": "create issue", "createIssue": "create issue", "create-issue": "create issue",
		"browser.navigate": "browser navigate", "HTTPGet": "httpget", "": "", "发票_生成": "发票 生成",
	} {
		if got := nameWords(name); got != want {
			t.Errorf("nameWords(%q) = %q, want %q", name, got, want)
		}
	}
}
