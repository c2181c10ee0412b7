package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/toolsift/toolsift/config"
)

// Shutdown grace periods, after the MCP specification's stdio shutdown: "the client SHOULD
// initiate shutdown by first closing the input stream to the child process, waiting for the
// server to exit, or sending SIGTERM if the server does not exit within a reasonable time,
// and then sending SIGKILL if the server does not exit within a reasonable time after
// SIGTERM".
const (
	exitGrace = 2 * time.Second
	termGrace = 2 * time.Second
)

// process is a stdio server's child process and its pipes. toolsift starts it itself, rather
// than letting the transport do so, for two reasons: its exit is noticed at once, with no
// call in flight, and it runs in a process group of its own, so that what it starts (npx
// starts node) is stopped with it instead of outliving toolsift.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of the child's standard input
	stdout *os.File // our end of the child's standard output
	// exited is closed once the child has exited and been reaped; err is then its status.
	exited chan struct{}
	err    error
	closer sync.Once
}

// startProcess starts srv's command with its standard error going to stderr.
func startProcess(srv config.Server, stderr io.Writer) (*process, error) {
	if err := preflight(srv); err != nil {
		return nil, err
	}
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = append(os.Environ(), envList(srv.Env)...)
	cmd.Dir = srv.Cwd
	cmd.Stderr = stderr
	// A grandchild that keeps standard error open must not keep Wait from returning.
	cmd.WaitDelay = time.Second
	ownGroup(cmd)
	// Plain pipes rather than cmd.StdoutPipe: Wait closes those as soon as the child exits,
	// which would throw away the last lines it wrote before exiting.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{})}
	// This goroutine ends when the child does; Close makes sure it does.
	go func() {
		p.err = cmd.Wait()
		// The server is gone: whatever it started goes with it.
		signalGroup(cmd, sigKill)
		close(p.exited)
	}()
	return p, nil
}

// stdinWriter writes a server's standard input, giving up on a write that the server does
// not take within timeout. A server that stops reading would otherwise hold the transport's
// write lock for ever, and every call to it behind that lock. Giving up once is enough: the
// process is then stopped, which fails the writes queued behind at once, and its exit ends
// the connection, so the supervisor starts it anew (a half-written message has spoilt the
// stream anyway).
type stdinWriter struct {
	proc    *process
	timeout time.Duration
}

func (w *stdinWriter) Write(p []byte) (int, error) {
	// A file without deadlines (or a closed one) is written without: nothing better to do.
	_ = w.proc.stdin.SetWriteDeadline(time.Now().Add(w.timeout))
	n, err := w.proc.stdin.Write(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// Close is idempotent, and the connection's Close waits for it.
		go w.proc.Close()
		err = fmt.Errorf("the server took no input for %v (callTimeout): it stopped reading, and is restarted", w.timeout)
	}
	if errors.Is(err, os.ErrClosed) && !bytes.Contains(p, []byte(`"method"`)) {
		// An answer to a request the server made as it was being stopped (at toolsift's exit,
		// say): it would never be read, and the transport would log an error at every exit.
		// Requests and notifications still fail.
		return len(p), nil
	}
	return n, err
}

func (w *stdinWriter) Close() error { return w.proc.stdin.Close() }

// Close stops the child in the specification's order and reaps it. It is idempotent.
func (p *process) Close() error {
	p.closer.Do(func() {
		// "closing the input stream to the child process, waiting for the server to exit"
		p.stdin.Close()
		if !p.wait(exitGrace) {
			// "sending SIGTERM if the server does not exit within a reasonable time"
			signalGroup(p.cmd, sigTerm)
			if !p.wait(termGrace) {
				// "then sending SIGKILL if the server does not exit within a reasonable
				// time after SIGTERM"
				signalGroup(p.cmd, sigKill)
				<-p.exited
			}
		}
		// Unblocks the transport's reader if a grandchild still holds the other end.
		p.stdout.Close()
	})
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		// The exit status of a server we asked to stop is not news.
		return nil
	}
	return p.err
}

// wait reports whether the child exits within d.
func (p *process) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}
