//go:build !unix

package cputime

import "time"

func self() time.Duration { return 0 }
