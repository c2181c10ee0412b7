package apitoken

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLifecycle: a token is shown once, kept only hashed, verified by another process's
// store at once, and gone once revoked.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "tokens.json")
	cli, service := Open(file), Open(file)
	if service.InUse() {
		t.Fatal("a store with no file is in use")
	}
	tok, err := cli.Create(ctx, "ci-runner")
	if err != nil || !strings.HasPrefix(tok, Prefix) || len(tok) < 40 {
		t.Fatalf("Create = %q, %v", tok, err)
	}
	if data, _ := os.ReadFile(file); strings.Contains(string(data), tok) || !strings.Contains(string(data), "ci-runner") {
		t.Errorf("the file holds the token, or not its name:\n%s", data)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if name, ok := service.Verify(tok); !ok || name != "ci-runner" || !service.InUse() {
		t.Errorf("Verify = %q, %v", name, ok)
	}
	for _, bad := range []string{"", tok + "x", tok[:len(tok)-1], strings.ToUpper(tok), "Bearer " + tok} {
		if _, ok := service.Verify(bad); ok {
			t.Errorf("Verify(%q) accepted", bad)
		}
	}
	if _, err := cli.Create(ctx, "ci-runner"); !errors.Is(err, ErrExists) {
		t.Errorf("a second ci-runner = %v, want ErrExists", err)
	}
	for _, name := range []string{"", "has space", "../x", strings.Repeat("a", 65), "-dash"} {
		if _, err := cli.Create(ctx, name); err == nil {
			t.Errorf("Create(%q) accepted", name)
		}
	}
	list, err := cli.List()
	if err != nil || len(list) != 1 || list[0].Name != "ci-runner" {
		t.Errorf("List = %+v, %v", list, err)
	}
	if err := cli.Revoke(ctx, "ci-runner"); err != nil {
		t.Fatal(err)
	}
	if _, ok := service.Verify(tok); ok || !service.InUse() {
		t.Error("a revoked token still verifies, or the store is no longer in use with none left")
	}
	if err := cli.Revoke(ctx, "ci-runner"); err == nil || !strings.Contains(err.Error(), "toolsift token list") {
		t.Errorf("revoking it again = %v", err)
	}
}
