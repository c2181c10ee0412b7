//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
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
	prw, undo := pollable(r)
	if prw == io.ReadWriter(r) {
		t.Fatal("pollable returned the pipe itself")
	}
	pr, ok := prw.(interface {
		io.Reader
		SetReadDeadline(time.Time) error
	})
	if !ok {
		t.Fatalf("pollable returned %T, which takes no deadline", prw)
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
	if got, undo := pollable(f); got != io.ReadWriter(f) || nonblocking(t, f) {
		t.Error("a regular file was changed")
	} else {
		undo()
	}
	r, _ := blockingPipe(t)
	r.Close()
	if got, undo := pollable(r); got != io.ReadWriter(r) {
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
	if pr == io.ReadWriter(r) {
		t.Fatal("pollable returned the pipe itself")
	}
	undo()
	if !nonblocking(t, r) {
		t.Error("a pipe that was non-blocking is left blocking")
	}
}

// TestPolledPipe: what a pollable pipe's raw reads and writes pass is whole and in order
// when the writer outruns the reader (a 1 MiB tools/list through a 64 KiB pipe), the end of
// input is io.EOF, and a write with no reader left, or after Close, fails.
func TestPolledPipe(t *testing.T) {
	r, w := blockingPipe(t)
	pr, undoR := pollable(r)
	pw, undoW := pollable(w)
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	wrote := make(chan error, 1)
	go func() {
		n, err := pw.Write(want)
		if err == nil && n != len(want) {
			err = fmt.Errorf("wrote %d of %d bytes", n, len(want))
		}
		undoW() // closes the write end: the reader then meets the end
		w.Close()
		wrote <- err
	}()
	var got []byte
	buf := make([]byte, 1000) // reads smaller than writes
	for {
		time.Sleep(time.Microsecond) // a slower reader: the pipe fills
		n, err := pr.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(got), err)
		}
		if n == 0 { // io.Reader allows it, but a pipe read that blocks never needs it
			t.Fatalf("read after %d bytes: nothing, and no error", len(got))
		}
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written in order", len(got), len(want))
	}
	if n, err := pr.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("read after the end = %d, %v; want io.EOF", n, err)
	}
	undoR()
	if _, err := pr.Read(buf); err == nil {
		t.Error("read after close: no error")
	}

	r2, w2 := blockingPipe(t)
	pw2, undo := pollable(w2)
	defer undo()
	r2.Close()
	if _, err := pw2.Write([]byte("x\n")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("write with no reader = %v, want EPIPE", err)
	}
}
