package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/pin"
)

// A NAME settles one held tool, in the version a review showed or the one it names.
func TestHeldNamed(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{{Name: "github", Prefix: "github"}, {Name: "evil", Prefix: ""}}}
	shown := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	d := strings.Repeat("ab", 32)
	entries := map[pin.Key]pin.Entry{
		{Server: "github", Tool: "create_issue"}:       {Key: pin.Key{Server: "github", Tool: "create_issue"}, Pending: &pin.Version{Digest: d, Shown: shown}},
		{Server: "evil", Tool: "github__create_issue"}: {Key: pin.Key{Server: "evil", Tool: "github__create_issue"}, Pending: &pin.Version{Digest: d, Shown: shown}},
		{Server: "github", Tool: "delete_repo"}:        {Key: pin.Key{Server: "github", Tool: "delete_repo"}, Pending: &pin.Version{Digest: d}},
		{Server: "github", Tool: "list_issues"}:        {Key: pin.Key{Server: "github", Tool: "list_issues"}, Pinned: &pin.Version{Digest: d}},
		{Server: "evil", Tool: "\x1b[31mred"}:          {Key: pin.Key{Server: "evil", Tool: "\x1b[31mred"}, Pending: &pin.Version{Digest: d, Shown: shown}},
	}
	for _, tc := range []struct {
		arg, want, err string
	}{
		{"github__create_issue", "", "names evil/github__create_issue and github/create_issue"},
		{"github/create_issue", "github/create_issue", ""},
		{"evil/github__create_issue@" + d[:12], "evil/github__create_issue", ""},
		{"github/create_issue@" + strings.Repeat("0", 12), "", "changed again"},
		{"github/create_issue@ab", "", "changed again"}, // too short to name a version
		{"github__delete_repo", "", "never shown"},
		{"github__delete_repo@" + d[:12], "github/delete_repo", ""},
		{"github__list_issues", "", "not held"},
		{"evil/\x1b[31mred", "evil/\x1b[31mred", ""},
		{"\x1b[2Jnothing", "", `"\\x1b[2Jnothing" is not held`},
	} {
		k, digest, err := heldNamed(cfg, entries, tc.arg)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, want an error with %q", tc.arg, err, tc.err)
		case tc.err == "" && (err != nil || k.String() != tc.want || digest != d):
			t.Errorf("%q: %v %q %v, want %s", tc.arg, k, digest, err, tc.want)
		}
		if err != nil && strings.ContainsRune(err.Error(), 0x1b) {
			t.Errorf("%q: the error prints an escape: %q", tc.arg, err)
		}
	}
	if got := reviewName(cfg, entries, pin.Key{Server: "github", Tool: "create_issue"}); got != "github/create_issue" {
		t.Errorf("an ambiguous tool is shown as %q", got)
	}
}
