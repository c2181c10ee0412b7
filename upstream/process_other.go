//go:build !unix && !windows

package upstream

import (
	"os"
	"os/exec"
)

const (
	sigTerm = 0
	sigKill = 1
)

// ownGroup does nothing: there are no process groups here.
func ownGroup(*exec.Cmd) {}

// signalGroup stops the child; without process groups or SIGTERM, only outright.
func signalGroup(cmd *exec.Cmd, sig int) {
	if sig == sigKill || sig == sigTerm {
		_ = cmd.Process.Signal(os.Kill)
	}
}
