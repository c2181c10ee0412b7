package upstream

import (
	"fmt"
	"regexp"
	"strings"
)

// brokenNpx finds the folder of npx's cache that a failed npx names, in npm's own error
// text, when the folder lacks its package.json.
var brokenNpx = regexp.MustCompile(`ENOENT[^\n]*?([^\s'"]*[/\\]_npx[/\\][0-9a-f]+)[/\\]package\.json`)

// noise matches stderr lines that never tell why a server failed: runtimes' version
// banners, stack frames, and the scaffolding around a thrown error.
var noise = regexp.MustCompile(`^(Node\.js v\d|Python \d|Deno \d|Bun v\d|at |File "|\^+$|throw err;?$|[{}\[\]]+,?$|code: |requireStack: |\.\.\. \d+ more|goroutine \d+ |exit status \d)`)

// telling matches stderr lines that name an error: "Error: …", "TypeError: …",
// "ModuleNotFoundError: …", "error: …", "panic: …", "fatal: …", "Traceback …".
var telling = regexp.MustCompile(`(?i)^(\w*(error|exception)\b|panic\b|fatal\b|traceback\b|caused by\b)`)

// explain turns what a server that failed to start wrote into a short reason: a fix, when
// the failure is a known one; else the line that names the error (the last such, as a
// Python traceback ends with its error and Node prints its version after); else the last
// line that is not a banner or a stack frame.
func explain(stderr string) string {
	if m := brokenNpx.FindStringSubmatch(stderr); m != nil {
		// npm leaves the folder half-written when a download is interrupted, and every later
		// npx of the same package then fails at once.
		return fmt.Sprintf("npx's cache folder %s is broken, as an interrupted download leaves it: delete that folder and the server is downloaded again", m[1])
	}
	var best, last string
	for line := range strings.Lines(stderr) {
		line = strings.TrimSpace(line)
		if line == "" || noise.MatchString(line) {
			continue
		}
		last = line
		if telling.MatchString(line) && !strings.HasPrefix(strings.ToLower(line), "traceback") {
			best = line
		}
	}
	if best == "" {
		best = last
	}
	if r := []rune(best); len(r) > 200 {
		best = string(r[:200]) + "…"
	}
	return best
}

// stderrTailLines is how many of a failed server's last stderr lines status --verbose shows.
const stderrTailLines = 8

// tailLines returns the last n non-blank lines of stderr, for a user to read in full.
func tailLines(stderr string, n int) []string {
	var lines []string
	for line := range strings.Lines(stderr) {
		if line = strings.TrimRight(line, " \t\r\n"); strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	return lines[max(0, len(lines)-n):]
}
