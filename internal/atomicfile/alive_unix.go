//go:build unix

package atomicfile

import (
	"errors"
	"syscall"
)

// alive reports whether a process with this ID exists (a signal 0 reaches it, or is
// refused for want of permission).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
