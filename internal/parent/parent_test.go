//go:build unix

package parent

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary be a watcher (PARENT_TEST=watch: prints "watching", then
// "stopped" when its parent has gone) or a middle process (PARENT_TEST=middle: starts a
// watcher sharing its stdout, then sleeps until killed).
func TestMain(m *testing.M) {
	switch os.Getenv("PARENT_TEST") {
	case "watch":
		ctx, stop := Watch(context.Background(), nil)
		fmt.Println("watching")
		<-ctx.Done()
		stop()
		fmt.Println("stopped")
		os.Exit(0)
	case "middle":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "PARENT_TEST=watch")
		cmd.Stdout = os.Stdout
		if err := cmd.Start(); err != nil {
			os.Exit(1)
		}
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

// lines returns a channel of cmd's stdout lines, closed at its end.
func lines(t *testing.T, cmd *exec.Cmd) <-chan string {
	t.Helper()
	// A pipe of our own: cmd.Wait does not close it, and the watcher still holds its end.
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	t.Cleanup(func() { w.Close() })
	ch := make(chan string, 10)
	// Ends with the pipe, which ends with the processes writing it.
	go func() {
		defer close(ch)
		s := bufio.NewScanner(out)
		for s.Scan() {
			ch <- strings.TrimSpace(s.Text())
		}
	}()
	return ch
}

func expect(t *testing.T, ch <-chan string, want string, within time.Duration) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	case <-time.After(within):
		t.Fatalf("no %q within %v", want, within)
	}
}

// TestParentKilled: a watcher whose parent is killed with SIGKILL notices.
func TestParentKilled(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PARENT_TEST=middle")
	ch := lines(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd.Stdout.(*os.File).Close()
	expect(t, ch, "watching", 10*time.Second)
	cmd.Process.Kill()
	cmd.Wait()
	expect(t, ch, "stopped", 3*time.Second)
}

// TestParentThreadEnds: on Linux the death signal comes when the parent THREAD that started
// the watcher ends; the parent process lives on, so the watcher must not stop.
func TestParentThreadEnds(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PARENT_TEST=watch")
	ch := lines(t, cmd)
	started := make(chan error, 1)
	go func() {
		// Locked and never unlocked: the thread ends with this goroutine.
		runtime.LockOSThread()
		started <- cmd.Start()
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	expect(t, ch, "watching", 10*time.Second)
	select {
	case got := <-ch:
		t.Fatalf("the watcher said %q when only its parent's thread ended", got)
	case <-time.After(2 * time.Second):
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the watcher is gone: %v", err)
	}
}
