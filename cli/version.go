package cli

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// version and commit are set by a release build (scripts/dist.sh) with -ldflags
// "-X github.com/toolsift/toolsift/cli.version=… -X …cli.commit=…"; otherwise they come
// from the build info: the module version of go install …@vX.Y.Z, or the checkout's commit
// of go build.
var version, commit = "", ""

func init() {
	register(command{
		name: "version", summary: "print the version",
		run: func(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
			fs := flag.NewFlagSet("version", flag.ContinueOnError)
			if _, done, err := parseFlags(fs, args, stdout); done || err != nil {
				return err
			}
			fmt.Fprintln(stdout, versionLine())
			return nil
		},
	})
}

func buildVersion() string {
	v, _ := build()
	return v
}

// versionLine is what toolsift --version prints: the version, and the commit when known,
// so that a bug report says which build it came from.
func versionLine() string {
	v, c := build()
	if c == "" {
		return "toolsift " + v
	}
	return "toolsift " + v + " (commit " + c + ")"
}

// build returns the version and commit this binary was built from: those stamped by a
// release build, else what the Go toolchain recorded.
func build() (v, c string) {
	v, c = version, commit
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return cmp.Or(v, "dev"), c
	}
	return buildInfo(v, c, info)
}

func buildInfo(v, c string, info *debug.BuildInfo) (string, string) {
	if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			if c == "" {
				c = s.Value[:min(12, len(s.Value))]
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if c != "" && modified && !strings.HasSuffix(c, "+dirty") {
		c += "+dirty"
	}
	return cmp.Or(v, "dev"), c
}
