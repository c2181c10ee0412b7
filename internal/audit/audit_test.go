package audit

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, keep := range []bool{false, true} {
		var b strings.Builder
		l := New(&b, keep)
		if err := l.Write(Record{Tool: "a", Outcome: OK, ArgumentBytes: 9, Arguments: json.RawMessage(`{"q":"x"}`)}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), `"arguments":{"q":"x"}`); got != keep || strings.Count(b.String(), "\n") != 1 {
			t.Errorf("arguments kept=%v: %s", keep, b.String())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("a second Close: %v", err)
		}
		if err := l.Write(Record{Tool: "b"}); err == nil {
			t.Errorf("a write after Close succeeded")
		}
	}
}
