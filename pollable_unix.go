//go:build unix

package main

import (
	"io"
	"os"

	"github.com/toolsift/toolsift/internal/quiet"
	"golang.org/x/sys/unix"
)

// pollable returns a file for f that the Go runtime's poller waits on, and a func that
// closes it and puts f back as it was, when f is a pipe or a socket; otherwise f itself.
//
// A process's stdin and stdout come blocking, and Go reads and writes such a file by
// blocking a thread in the system call: every request over stdio then hands the reading
// goroutine's processor to another thread, and back, which costs more CPU than decoding
// the request. A pollable file parks the goroutine instead (and on Linux is read and
// written without telling the scheduler: see quiet.File).
//
// Non-blocking mode belongs to the open file, which f shares with whatever else holds it,
// so it is set only for pipes and sockets (never a terminal, which a shell shares) and put
// back as it was when done. The new file is a duplicate, so that f, which still owns the
// descriptor, is never left closed under its owner.
func pollable(f *os.File) (io.ReadWriter, func()) {
	rc, err := f.SyscallConn()
	if err != nil {
		return f, func() {}
	}
	var dup int
	var wasNonblocking bool
	var setErr error
	if err := rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if setErr = unix.Fstat(int(fd), &st); setErr != nil {
			return
		}
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
			setErr = os.ErrInvalid
			return
		}
		flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if setErr = err; err != nil {
			return
		}
		wasNonblocking = flags&unix.O_NONBLOCK != 0
		// Close-on-exec at once: upstream servers are started meanwhile.
		if dup, setErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0); setErr != nil {
			return
		}
		if setErr = unix.SetNonblock(dup, true); setErr != nil {
			unix.Close(dup)
		}
	}); err != nil || setErr != nil {
		return f, func() {}
	}
	nf := os.NewFile(uintptr(dup), f.Name()) // non-blocking, so the poller takes it
	return quiet.File(nf), func() {
		nf.Close()
		// The open file f shares is as its other holders expect it. (Where stdin and stdout
		// are one socket, the second call found it non-blocking, and leaves it so; the first
		// clears it, last.)
		_ = rc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), wasNonblocking) })
	}
}
