//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollable returns a file for f that the Go runtime's poller waits on, and a func that
// closes it and puts f back as it was, when f is a pipe or a socket; otherwise f itself.
//
// A process's stdin and stdout come blocking, and Go reads and writes such a file by
// blocking a thread in the system call: every request over stdio then hands the reading
// goroutine's processor to another thread, and back, which costs more CPU than decoding
// the request. A pollable file parks the goroutine instead, and is read and written
// without telling the scheduler (see polled).
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
	nrc, err := nf.SyscallConn()
	if err != nil {
		nf.Close()
		return f, func() {}
	}
	return &polled{File: nf, rc: nrc}, func() {
		nf.Close()
		// The open file f shares is as its other holders expect it. (Where stdin and stdout
		// are one socket, the second call found it non-blocking, and leaves it so; the first
		// clears it, last.)
		_ = rc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), wasNonblocking) })
	}
}

// polled is a non-blocking pipe or socket, read and written with raw system calls between
// the poller's waits.
//
// os.File tells the scheduler of each read and write as a system call that may block, and
// on entering one the runtime wakes its monitor thread (sysmon) if it sleeps, which then
// polls every 20 µs for a millisecond or more. Over stdio every request makes two, so the
// monitor never slept again: it took a sixth of toolsift's CPU in a benchmark of searches.
// Neither can block here, the descriptor being non-blocking, so nothing is lost by not
// telling the scheduler.
type polled struct {
	*os.File // deadlines, Close, Name
	rc       syscall.RawConn
}

func (p *polled) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := p.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			if e == syscall.EINTR {
				continue
			}
			n, errno = int(r), e
			return e != syscall.EAGAIN // else wait until readable
		}
	})
	switch {
	case err != nil:
		return 0, &os.PathError{Op: "read", Path: p.Name(), Err: err}
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: p.Name(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (p *polled) Write(b []byte) (int, error) {
	var done int
	var errno syscall.Errno
	err := p.rc.Write(func(fd uintptr) bool {
		for done < len(b) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[done])), uintptr(len(b)-done))
			switch e {
			case 0:
				done += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // the pipe is full: wait until writable
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return done, &os.PathError{Op: "write", Path: p.Name(), Err: err}
	case errno != 0:
		return done, &os.PathError{Op: "write", Path: p.Name(), Err: errno}
	}
	return done, nil
}
