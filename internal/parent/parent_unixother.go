//go:build unix && !linux

package parent

import (
	"os"
	"time"
)

// notifyDeath: macOS and the BSDs send nothing at a parent's end; getppid is polled.
func notifyDeath() (wake <-chan os.Signal, poll time.Duration, stop func()) {
	return nil, pollEvery, func() {}
}
