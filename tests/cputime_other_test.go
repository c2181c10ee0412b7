//go:build !linux

package tests

// processUsage reports false: only Linux is read.
func processUsage(pid int) (usage, bool) { return usage{}, false }
