//go:build !unix

package gate

// fileLimit is 0, unknown: the system sets no small limit of open files.
func fileLimit() int { return 0 }
