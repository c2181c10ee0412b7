package upstream

import (
	"fmt"
	"regexp"
	"strings"
)

// brokenNpx finds the folder of npx's cache that a failed npx names, in npm's own error
// text, when the folder lacks its package.json.
var brokenNpx = regexp.MustCompile(`ENOENT[^\n]*?([^\s'"]*[/\\]_npx[/\\][0-9a-f]+)[/\\]package\.json`)

// explain turns what a server that failed to start wrote last into a short reason: a fix,
// when the failure is a known one, else its last line.
func explain(stderr string) string {
	if m := brokenNpx.FindStringSubmatch(stderr); m != nil {
		// npm leaves the folder half-written when a download is interrupted, and every later
		// npx of the same package then fails at once.
		return fmt.Sprintf("npx's cache folder %s is broken, as an interrupted download leaves it: delete that folder and the server is downloaded again", m[1])
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if r := []rune(last); len(r) > 200 {
		last = string(r[:200]) + "…"
	}
	return last
}
