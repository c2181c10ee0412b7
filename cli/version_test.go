package cli

import (
	"runtime/debug"
	"testing"
)

func TestBuildInfo(t *testing.T) {
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "e4b167a7d8231c4fe32503c50385fd3690c5d3a7"}
	dirty := debug.BuildSetting{Key: "vcs.modified", Value: "true"}
	clean := debug.BuildSetting{Key: "vcs.modified", Value: "false"}
	tests := []struct {
		name         string
		stamped, sc  string // what a release build stamped
		mod          string
		settings     []debug.BuildSetting
		wantV, wantC string
	}{
		{"go install …@v1.2.3", "", "", "v1.2.3", nil, "v1.2.3", ""},
		{"go build in a checkout", "", "", "(devel)", []debug.BuildSetting{rev, clean}, "dev", "e4b167a7d823"},
		{"… with changes", "", "", "v0.0.0-20261204011011-e4b167a7d823+dirty", []debug.BuildSetting{rev, dirty}, "v0.0.0-20261204011011-e4b167a7d823+dirty", "e4b167a7d823+dirty"},
		{"a release build", "v1.3.0", "0123456789ab", "(devel)", []debug.BuildSetting{rev, clean}, "v1.3.0", "0123456789ab"},
		{"nothing known", "", "", "", nil, "dev", ""},
		{"a short revision", "", "", "(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "dev", "abc"},
	}
	for _, tt := range tests {
		info := &debug.BuildInfo{Main: debug.Module{Version: tt.mod}, Settings: tt.settings}
		if v, c := buildInfo(tt.stamped, tt.sc, info); v != tt.wantV || c != tt.wantC {
			t.Errorf("%s: %q, %q; want %q, %q", tt.name, v, c, tt.wantV, tt.wantC)
		}
	}
}
