package upstream

import (
	"fmt"
	"testing"
)

func TestTail(t *testing.T) {
	tail := NewTail(16)
	fmt.Fprint(tail, "first line\nsecond line\nthird\n")
	if got := tail.String(); got != "third" {
		t.Errorf("Tail = %q, want %q", got, "third")
	}
	tail.Reset()
	if got := tail.String(); got != "" {
		t.Errorf("after Reset, Tail = %q", got)
	}
}
