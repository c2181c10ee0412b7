//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockingPipe returns a pipe whose read end is blocking, as a process's stdin comes.
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "pipe")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) })
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// TestPollablePipe: a blocking pipe is read through a file the poller waits on (one that
// takes a deadline), and is blocking again once done with.
func TestPollablePipe(t *testing.T) {
	r, w := blockingPipe(t)
	if err := r.SetReadDeadline(time.Now()); !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("the blocking pipe takes a deadline (%v): the test proves nothing", err)
	}
	pr, undo := pollable(r)
	if pr == r {
		t.Fatal("pollable returned the pipe itself")
	}
	if err := pr.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatalf("the pollable file takes no deadline: %v", err)
	}
	buf := make([]byte, 8)
	if _, err := pr.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with nothing written = %v, want the deadline", err)
	}
	pr.SetReadDeadline(time.Time{})
	w.Write([]byte("hello\n"))
	if n, err := pr.Read(buf); err != nil || string(buf[:n]) != "hello\n" {
		t.Fatalf("read = %q, %v", buf[:n], err)
	}
	undo()
	if nonblocking(t, r) {
		t.Error("the pipe is left non-blocking")
	}
	w.Write([]byte("again\n")) // the original still reads
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "again\n" {
		t.Fatalf("the original after undo: read = %q, %v", buf[:n], err)
	}
}

// TestPollableLeavesOthersAlone: a regular file and a closed file come back as they are.
func TestPollableLeavesOthersAlone(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, undo := pollable(f); got != f || nonblocking(t, f) {
		t.Error("a regular file was changed")
	} else {
		undo()
	}
	r, _ := blockingPipe(t)
	r.Close()
	if got, undo := pollable(r); got != r {
		t.Error("a closed file was replaced")
	} else {
		undo()
	}
}

// TestPollableKeepsNonblocking: a pipe that was non-blocking already is left so.
func TestPollableKeepsNonblocking(t *testing.T) {
	r, _ := blockingPipe(t)
	rc, _ := r.SyscallConn()
	rc.Control(func(fd uintptr) { unix.SetNonblock(int(fd), true) })
	pr, undo := pollable(r)
	if pr == r {
		t.Fatal("pollable returned the pipe itself")
	}
	undo()
	if !nonblocking(t, r) {
		t.Error("a pipe that was non-blocking is left blocking")
	}
}
