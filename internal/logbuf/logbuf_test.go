package logbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/mcptest"
)

func TestLinesInOrder(t *testing.T) {
	var out mcptest.Buffer
	w := New(&out, 1<<20)
	var want strings.Builder
	for i := range 1000 {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	w.Flush()
	if got := out.String(); got != want.String() {
		t.Fatalf("after Flush, %d bytes written, want %d", len(got), want.Len())
	}
	w.Write([]byte("last\n"))
	w.Close()
	w.Close() // idempotent
	if got := out.String(); !strings.HasSuffix(got, "line 999\nlast\n") {
		t.Fatalf("after Close, the output ends %q", got[max(0, len(got)-20):])
	}
	w.Write([]byte("after\n")) // straight through
	if got := out.String(); !strings.HasSuffix(got, "last\nafter\n") {
		t.Fatalf("a write after Close: output ends %q", got[max(0, len(got)-20):])
	}
}

// blockingWriter blocks every write until released.
type blockingWriter struct {
	started chan struct{}
	release chan struct{}
	out     mcptest.Buffer
	once    sync.Once
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.once.Do(func() { close(b.started) })
	<-b.release
	return b.out.Write(p)
}

// TestStalledReader: while the reader of the log does not read, writes return at once, what
// exceeds the limit is dropped, and the count is written once the reader goes on.
func TestStalledReader(t *testing.T) {
	bw := &blockingWriter{started: make(chan struct{}), release: make(chan struct{})}
	w := New(bw, 100)
	w.Write([]byte("first\n")) // taken by the goroutine, which then blocks
	<-bw.started
	for i := range 50 {
		w.Write([]byte(fmt.Sprintf("line %02d\n", i))) // 8 bytes each: 12 fit
	}
	close(bw.release)
	w.Close()
	got := bw.out.String()
	want := "first\n"
	for i := range 12 {
		want += fmt.Sprintf("line %02d\n", i)
	}
	if !strings.HasPrefix(got, "first\n") || !strings.Contains(got, "toolsift: 38 log lines dropped") || !strings.HasSuffix(got, want[len("first\n"):]) {
		t.Fatalf("output:\n%s\nwant first, a count of 38 dropped, then lines 00 to 11", got)
	}
}

func TestConcurrentWritesAndClose(t *testing.T) {
	var out mcptest.Buffer
	w := New(&out, 1<<20)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				w.Write([]byte(fmt.Sprintf("g%d %d\n", g, i)))
			}
		})
	}
	wg.Go(func() { w.Close() })
	wg.Wait()
	w.Close()
	if n := strings.Count(out.String(), "\n"); n != 800 {
		t.Fatalf("%d lines written, want 800", n)
	}
}

// TestCloseWritesWhatIsQueued: a line written just before Close, with no batch due yet, is
// written by Close; and Close does not wait for ever on a reader that never reads.
func TestCloseWritesWhatIsQueued(t *testing.T) {
	for range 200 {
		var out mcptest.Buffer
		w := New(&out, 1<<20)
		w.Write([]byte("last\n"))
		w.Close()
		if got := out.String(); got != "last\n" {
			t.Fatalf("after Close: %q", got)
		}
	}
	bw := &blockingWriter{started: make(chan struct{}), release: make(chan struct{})}
	defer close(bw.release)
	w := New(bw, 100)
	w.Write([]byte("stuck\n"))
	start := time.Now()
	w.Close()
	if d := time.Since(start); d > closeWait+time.Second {
		t.Errorf("Close took %v on a reader that never reads", d)
	}
}
