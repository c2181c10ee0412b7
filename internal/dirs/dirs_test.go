package dirs

import (
	"path/filepath"
	"runtime"
	"testing"
)

func TestState(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the fallback below is Linux's")
	}
	home := t.TempDir()
	tests := []struct {
		name, xdg, want string
	}{
		{"xdg set", "/x/state", "/x/state/toolsift"},
		{"xdg unset", "", filepath.Join(home, ".local", "state", "toolsift")},
		// The XDG spec: a relative path is invalid and must be ignored.
		{"xdg relative", "rel/state", filepath.Join(home, ".local", "state", "toolsift")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("XDG_STATE_HOME", tt.xdg)
			got, err := State()
			if err != nil || got != tt.want {
				t.Errorf("State() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
