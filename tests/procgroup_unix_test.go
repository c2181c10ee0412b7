//go:build unix

package tests

import (
	"os/exec"
	"syscall"
)

// ownGroup puts cmd, and all it starts, in a process group of its own, whose id is its pid.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills every process of group pgid.
func killGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }

// groupAlive reports whether group pgid has a process, zombies included.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }
