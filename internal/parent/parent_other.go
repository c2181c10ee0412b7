//go:build !unix && !windows

package parent

import "context"

// waitGone: nothing tells of a parent's end here; toolsift ends with its stdin.
func waitGone(ctx context.Context, _ int) bool {
	<-ctx.Done()
	return false
}
