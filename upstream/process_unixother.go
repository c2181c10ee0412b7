//go:build unix && !linux

package upstream

import "syscall"

// dieWithParent does nothing: only Linux can signal a child when its parent dies.
func dieWithParent(*syscall.SysProcAttr) {}
