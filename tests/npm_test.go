//go:build unix

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// release builds the release for this platform with scripts/dist.sh, once, into a folder it
// returns.
var release = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "toolsift-npm")
	if err != nil {
		return "", err
	}
	dist := filepath.Join(dir, "dist")
	cmd := exec.Command("bash", "scripts/dist.sh")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-test", "DIST="+dist, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("scripts/dist.sh: %v\n%s", err, out)
	}
	return dist, nil
})

// npmInstall installs the release's npm tarballs offline into a fresh prefix named name, as
// npm install -g would with flags, and returns the installed `toolsift`.
func npmInstall(name string, flags ...string) (string, error) {
	dist, err := release()
	if err != nil {
		return "", err
	}
	tarballs, _ := filepath.Glob(filepath.Join(dist, "npm", "*.tgz"))
	if len(tarballs) != 2 {
		return "", fmt.Errorf("dist/npm has %v, want the launcher and this platform's package", tarballs)
	}
	prefix := filepath.Join(filepath.Dir(dist), name)
	args := append([]string{"install", "-g", "--prefix", prefix, "--offline", "--no-audit", "--no-fund"}, flags...)
	install := exec.Command("npm", append(args, tarballs...)...)
	if out, err := install.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install: %v\n%s", err, out)
	}
	return filepath.Join(prefix, "bin", "toolsift"), nil
}

// npmRelease is a plain npm install: on Unix its postinstall puts the binary itself where
// the launcher was. npmNodeLauncher is one with --ignore-scripts, which keeps the Node
// launcher (as Windows does, and other package managers).
var (
	npmRelease      = sync.OnceValues(func() (string, error) { return npmInstall("prefix") })
	npmNodeLauncher = sync.OnceValues(func() (string, error) { return npmInstall("prefix-node", "--ignore-scripts") })
)

// launcher returns the `toolsift` of a plain npm install.
func launcher(t testing.TB) string {
	t.Helper()
	p, err := npmRelease()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// nodeLauncher returns the `toolsift` of an install that kept the Node launcher.
func nodeLauncher(t testing.TB) string {
	t.Helper()
	p, err := npmNodeLauncher()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// isScript reports whether the file at path (through links) starts with #!.
func isScript(t testing.TB, path string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.HasPrefix(string(data), "#!")
}

// TestNPMPackage installs the npm tarballs offline, as a user without Go would, and runs
// toolsift through the launcher: its version, its exit code, an MCP session, and its end.
func TestNPMPackage(t *testing.T) {
	// A plain install runs the binary with no Node in between; --ignore-scripts keeps the
	// launcher, which must work as well.
	if isScript(t, launcher(t)) {
		t.Errorf("npm install linked %s to a script: want this platform's binary in the launcher's place", launcher(t))
	}
	if !isScript(t, nodeLauncher(t)) {
		t.Errorf("npm install --ignore-scripts linked %s to no script: want the Node launcher", nodeLauncher(t))
	}
	t.Run("binary", func(t *testing.T) { testNPMPackage(t, launcher(t)) })
	t.Run("node", func(t *testing.T) { testNPMPackage(t, nodeLauncher(t)) })
}

func testNPMPackage(t *testing.T, ts string) {
	out, err := exec.Command(ts, "--version").Output()
	if err != nil || !regexp.MustCompile(`^toolsift v0\.0\.0-test \(commit [0-9a-f]{12}\)\n$`).Match(out) {
		t.Errorf("toolsift --version = %q, %v", out, err)
	}
	// A usage mistake exits 2 through the launcher, with toolsift's message.
	cmd := exec.Command(ts, "frobnicate")
	stderr, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(stderr), `unknown command "frobnicate"`) {
		t.Errorf("exit %d: %s", cmd.ProcessState.ExitCode(), stderr)
	}

	// A client through the launcher: stdin, stdout and stderr are toolsift's.
	cfg := config(t, fmt.Sprintf("mcpServers:\n  gh:\n    command: %s\n    args: [--catalog, %s]\n", fixtureBin, catalog(t, "github")))
	c := start(t, ts, "--config", cfg)
	c.initialize()
	if tools := names(c.listTools()); !slices.Contains(tools, "tool_search") {
		t.Errorf("tools through the launcher: %v", tools)
	}
	if res := c.search("create issue", 1); len(res.Matches) == 0 || res.Matches[0].Name != "gh__create_issue" {
		t.Errorf("search through the launcher: %+v", res)
	}
	// stdin's end ends toolsift, and the launcher with it.
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("toolsift's stdout still open 10s after stdin closed")
	}
}

// TestNPMLauncherSignals: SIGTERM or SIGINT to the Node launcher ends toolsift, and the
// launcher ends as toolsift did; nothing is left running. (A plain install on Unix has no
// launcher: the signal goes to toolsift itself.)
func TestNPMLauncherSignals(t *testing.T) {
	ts := nodeLauncher(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(ts, "--config", config(t, "mcpServers: {}\n"))
		cmd.Env = isolatedEnv(t)
		stdin, _ := cmd.StdinPipe() // held open: only the signal ends it
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var kid int
		eventually(t, 10*time.Second, "the launcher starting toolsift", func() bool {
			kids := childrenOf(t, cmd.Process.Pid)
			if len(kids) == 1 {
				kid = kids[0]
			}
			return kid != 0
		})
		time.Sleep(200 * time.Millisecond) // toolsift's signal handling is installed
		cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			// toolsift ends cleanly on either signal, and the launcher as toolsift did.
			if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); err != nil && !(ws.Signaled() && ws.Signal() == sig) {
				t.Errorf("%v: the launcher ended with %v", sig, err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%v: the launcher still running 10s later", sig)
		}
		stdin.Close()
		eventually(t, 5*time.Second, "toolsift ending with the launcher", func() bool { return !running(kid) })
	}
}

// BenchmarkLauncher times toolsift --version through the npm launcher and bare: what the
// launcher adds to a client's start of toolsift.
func BenchmarkLauncher(b *testing.B) {
	ts := nodeLauncher(b)
	bare := filepath.Join(filepath.Dir(ts), "..", "lib", "node_modules", "toolsift-"+runtime.GOOS+"-"+npmArch(), "bin", "toolsift")
	for _, run := range []struct{ name, path string }{{"bare", bare}, {"launcher", ts}} {
		b.Run(run.name, func(b *testing.B) {
			for b.Loop() {
				if out, err := exec.Command(run.path, "--version").Output(); err != nil {
					b.Fatalf("%s --version: %v %s", run.path, err, out)
				}
			}
		})
	}
}

func npmArch() string {
	if runtime.GOARCH == "amd64" {
		return "x64"
	}
	return runtime.GOARCH
}

// TestServerJSON checks the MCP Registry entry, the repository's and the one a release
// writes, against the registry's schema, and that it names the npm package as that package
// names it.
func TestServerJSON(t *testing.T) {
	dist, err := release()
	if err != nil {
		t.Fatal(err)
	}
	validate := exec.Command("node", "registry/validate.mjs", "registry/server.schema.json", "../server.json", filepath.Join(dist, "server.json"))
	if out, err := validate.CombinedOutput(); err != nil {
		t.Errorf("server.json against the registry's schema: %v\n%s", err, out)
	}
	var entry struct {
		Name     string
		Version  string
		Packages []struct{ RegistryType, Identifier, Version string }
	}
	var pkg struct {
		Name    string `json:"name"`
		MCPName string `json:"mcpName"`
	}
	for file, v := range map[string]any{filepath.Join(dist, "server.json"): &entry, "../npm/toolsift/package.json": &pkg} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if entry.Version != "0.0.0-test" || len(entry.Packages) != 1 || entry.Packages[0].Version != entry.Version {
		t.Errorf("the release's server.json is not at its version: %+v", entry)
	}
	if p := entry.Packages[0]; p.RegistryType != "npm" || p.Identifier != pkg.Name || pkg.MCPName != entry.Name {
		t.Errorf("server.json names %s %q as %q; the npm package is %q, mcpName %q", p.RegistryType, p.Identifier, entry.Name, pkg.Name, pkg.MCPName)
	}
}

// TestNPMLauncherWithoutItsBinary (issue 33, row 11): the launcher installed without its
// platform's package (offline, say) names the package to install, not an option the user
// never gave.
func TestNPMLauncherWithoutItsBinary(t *testing.T) {
	dist, err := release()
	if err != nil {
		t.Fatal(err)
	}
	tarballs, _ := filepath.Glob(filepath.Join(dist, "npm", "toolsift-[0-9]*.tgz"))
	if len(tarballs) != 1 {
		t.Fatalf("dist/npm has %v, want one launcher tarball", tarballs)
	}
	prefix := filepath.Join(t.TempDir(), "prefix")
	install := exec.Command("npm", "install", "-g", "--prefix", prefix, "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=optional", tarballs[0])
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(prefix, "bin", "toolsift"), "--version").CombinedOutput()
	pkg := "toolsift-" + runtime.GOOS + "-" + npmArch()
	if err == nil || !strings.Contains(string(out), "npm install -g "+pkg) || strings.Contains(string(out), "reinstall without") {
		t.Errorf("the launcher without its binary said (%v):\n%s\nwant it to name npm install -g %s", err, out, pkg)
	}
}

// TestReleaseArchiveAsReadmeSays (issue 33, rows 5-7): one downloaded archive checks with
// the README's command and unpacks into a folder of its own, overwriting nothing beside it;
// the README's quick start signs in where needed and its uninstall is npm's.
func TestReleaseArchiveAsReadmeSays(t *testing.T) {
	dist, err := release()
	if err != nil {
		t.Fatal(err)
	}
	name := "toolsift_v0.0.0-test_" + runtime.GOOS + "_" + runtime.GOARCH
	dir := t.TempDir()
	for _, f := range []string{name + ".tar.gz", "checksums.txt"} {
		data, err := os.ReadFile(filepath.Join(dist, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	check := exec.Command("sha256sum", "-c", "--ignore-missing", "checksums.txt")
	check.Dir = dir
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c --ignore-missing checksums.txt with one archive: %v\n%s", err, out)
	}
	untar := exec.Command("tar", "-xzf", name+".tar.gz")
	untar.Dir = dir
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	if mine, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(mine) != "mine" {
		t.Errorf("unpacking the archive overwrote the README.md beside it")
	}
	if out, err := exec.Command(filepath.Join(dir, name, "toolsift"), "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "v0.0.0-test") {
		t.Errorf("%s/toolsift --version = %v %s", name, err, out)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sha256sum -c --ignore-missing", "toolsift auth login NAME", "npm uninstall -g toolsift", "npm install -g toolsift-VERSION.tgz toolsift-OS-ARCH-VERSION.tgz"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
}
