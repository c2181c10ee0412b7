//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// ownGroup puts the child in a process group of its own, led by it, and, where the system
// can, has it killed when toolsift dies without stopping it (kill -9).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

// signalGroup sends sig to the child's process group. A group outlives its leader while
// any member is left, and its ID cannot be reused meanwhile, so this reaches what the child
// started even after the child has exited. (Once the group is empty the ID is free; for the
// signal to reach a stranger, PIDs would have to wrap around between the reaping and it.)
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
