package upstream

import (
	"regexp"
	"strings"
	"testing"
)

var apiName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestExposedName(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		prefix, tool string
		want         string // "" means: check only legality and determinism
	}{
		{"github", "create_issue", "github__create_issue"},
		{"", "create_issue", "create_issue"},
		{"k8s", "kubectl-get", "k8s__kubectl-get"},
		{"azure", "storage.blob.list", ""},
		{"x", "名前", ""},
		{"x", "a b", ""},
		{"x", long, ""},
		{"", "", ""},
		{"p", "emoji🚀", ""},
		{"p", strings.Repeat("é", 40), ""},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := ExposedName(tt.prefix, tt.tool)
		if tt.want != "" && got != tt.want {
			t.Errorf("ExposedName(%q, %q) = %q, want %q", tt.prefix, tt.tool, got, tt.want)
		}
		if !apiName.MatchString(got) {
			t.Errorf("ExposedName(%q, %q) = %q, not a legal API tool name", tt.prefix, tt.tool, got)
		}
		if again := ExposedName(tt.prefix, tt.tool); again != got {
			t.Errorf("ExposedName(%q, %q) not deterministic: %q then %q", tt.prefix, tt.tool, got, again)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("ExposedName(%q, %q) = %q, same as for %q", tt.prefix, tt.tool, got, prev)
		}
		seen[got] = tt.prefix + "/" + tt.tool
	}
	// Names that differ only in illegal characters must not collide.
	if a, b := ExposedName("p", "a.b"), ExposedName("p", "a b"); a == b {
		t.Errorf("ExposedName collides: %q", a)
	}
	if got := ExposedName("azure", "storage.blob.list"); !strings.HasPrefix(got, "azure__storage_blob_list_") {
		t.Errorf("stem not readable: %q", got)
	}
	// toolsift's own tool names are never an upstream tool's, even with an empty prefix.
	for _, name := range Reserved {
		if got := ExposedName("", name); got == name || !strings.HasPrefix(got, name+"_") {
			t.Errorf("ExposedName(\"\", %q) = %q, want it renamed", name, got)
		}
		if got := ExposedName("p", name); got != "p__"+name {
			t.Errorf("ExposedName(\"p\", %q) = %q: only the bare name is reserved", name, got)
		}
	}
}
