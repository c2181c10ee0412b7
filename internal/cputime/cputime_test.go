package cputime

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       Usage
		ok         bool
	}{
		{"plain", "42 (toolsift) S 1 42 42 0 -1 4194560 1234 0 0 0 150 25 0 0 20 0 8 0", Usage{CPU: 1750 * time.Millisecond, Faults: 1234}, true},
		{"name with spaces and parens", "42 (a (b) c) R 1 42 42 0 -1 0 7 0 0 0 1 2 0 0", Usage{CPU: 30 * time.Millisecond, Faults: 7}, true},
		{"truncated", "42 (toolsift) S 1 42", Usage{}, false},
		{"no command", "42 toolsift S 1 42 42 0 -1 0 7 0 0 0 1 2 0 0", Usage{}, false},
		{"not a number", "42 (x) S 1 42 42 0 -1 0 seven 0 0 0 1 2 0 0", Usage{}, false},
		{"empty", "", Usage{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseStat(tc.stat)
			if got != tc.want || ok != tc.ok {
				t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tc.stat, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestSelfCounts(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("getrusage is unix")
	}
	// Spin until 20 ms of CPU time are counted: on a busy machine 50 ms of wall time may
	// get less than that, but 5 s without it means Self does not count.
	start := Self()
	for deadline := time.Now().Add(5 * time.Second); Self()-start < 20*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("5 s of spinning counted %v of CPU time", Self()-start)
		}
	}
}

func TestOfSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only /proc is read")
	}
	u, ok := Of(os.Getpid())
	if !ok || u.Faults == 0 {
		t.Errorf("Of(self) = %+v, %v; want page faults counted", u, ok)
	}
	if _, ok := Of(-1); ok {
		t.Error("Of(-1) read a process")
	}
}
