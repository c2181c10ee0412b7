//go:build !unix && !windows

package filelock

import "os"

// Where the OS offers no file lock, a lock is the process's alone.
func tryLock(*os.File) error { return nil }

func unlock(*os.File) error { return nil }
