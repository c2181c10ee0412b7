//go:build windows

package upstream

import (
	"os/exec"
	"strconv"
	"syscall"
)

const (
	sigTerm = 0
	sigKill = 1
)

// ownGroup starts the child in a process group of its own, so that a Ctrl-C meant for
// toolsift's console does not reach it before toolsift stops it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// signalGroup stops the child and everything it started (npx.cmd runs cmd.exe, which runs
// node): Windows has no process groups to signal, and no SIGTERM for a console program,
// so taskkill ends the tree outright; if taskkill cannot run, the child alone is killed.
func signalGroup(cmd *exec.Cmd, _ int) {
	pid := strconv.Itoa(cmd.Process.Pid)
	if err := exec.Command("taskkill", "/T", "/F", "/PID", pid).Run(); err != nil {
		_ = cmd.Process.Kill()
	}
}
