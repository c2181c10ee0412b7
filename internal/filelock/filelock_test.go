package filelock

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestHeldLockWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.lock")
	release, err := Acquire(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, path); err == nil {
		t.Fatal("a second Acquire took a held lock")
	}
	release()
	release() // twice is fine
	again, err := Acquire(context.Background(), path)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 && runtime.GOOS != "windows" {
		t.Fatalf("lock file: %v %v", st, err)
	}
}

// TestKilledOwner: a lock whose process was killed (no chance to release it) is taken at
// once by the next.
func TestKilledOwner(t *testing.T) {
	if path := os.Getenv("FILELOCK_HOLD"); path != "" {
		if _, err := Acquire(context.Background(), path); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("held\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledOwner$")
	cmd.Env = append(os.Environ(), "FILELOCK_HOLD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("child said %q", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	if _, err := Acquire(ctx, path); err == nil {
		t.Fatal("took a lock a live process holds")
	}
	cancel()
	cmd.Process.Kill()
	cmd.Wait()
	start := time.Now()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	release, err := Acquire(ctx, path)
	if err != nil {
		t.Fatalf("a dead owner's lock: %v", err)
	}
	release()
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v to take a dead owner's lock", d)
	}
}
