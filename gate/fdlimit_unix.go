//go:build unix

package gate

import "syscall"

// fileLimit is the process's limit of open files, or 0 if unknown. Go raises the soft limit
// to the hard one at start, so this is what toolsift may use.
func fileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
