package quiet

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// File returns f, a non-blocking pipe or socket, to be read and written with raw system
// calls between the poller's waits.
//
// os.File tells the scheduler of each read and write as a system call that may block, and
// on entering one the runtime wakes its monitor thread (sysmon) if it sleeps, which then
// polls every 20 µs for a millisecond or more. Over stdio every request makes two, so the
// monitor never slept again: it took a sixth of toolsift's CPU in a benchmark of searches.
// Neither can block here, the descriptor being non-blocking, so nothing is lost by not
// telling the scheduler. Only on Linux: elsewhere a raw system call is not the supported
// way in (macOS), or not allowed at all (OpenBSD).
func File(f *os.File) io.ReadWriter {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	return &polled{File: f, rc: rc}
}

// polled is a file that File reads and writes.
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
