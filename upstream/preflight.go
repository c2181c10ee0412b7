package upstream

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/toolsift/toolsift/config"
)

// preflight checks what the system would only report obscurely at the start of a stdio
// server: exec's "fork/exec node: no such file or directory" names the program when the
// folder to run it in is missing, and "permission denied" when the program is a folder.
// Each error says what to change in the configuration.
func preflight(srv config.Server) error {
	if srv.Cwd != "" {
		st, err := os.Stat(srv.Cwd)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("cwd %s does not exist: create it, or fix cwd in the configuration", srv.Cwd)
		case err != nil:
			return fmt.Errorf("cwd %s: %w", srv.Cwd, err)
		case !st.IsDir():
			return fmt.Errorf("cwd %s is a file, not a folder: fix cwd in the configuration", srv.Cwd)
		}
	}
	path := srv.Command
	if !strings.ContainsAny(path, `/\`) {
		found, err := exec.LookPath(path)
		if err != nil {
			return notFound(srv, err)
		}
		path = found
	} else if !filepath.IsAbs(path) && srv.Cwd != "" {
		// exec runs a relative path with a separator from the child's folder.
		path = filepath.Join(srv.Cwd, path)
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return notFound(srv, err)
	case err == nil && st.IsDir():
		return fmt.Errorf("command %s is a folder, not a program: name the program to run (such as node or npx) in command, and what it runs in args", srv.Command)
	}
	return nil
}

// notFound explains a command that is not there. A command with spaces is most often a
// whole command line put in command, as a shell would take it.
func notFound(srv config.Server, err error) error {
	if program, rest, ok := strings.Cut(strings.TrimSpace(srv.Command), " "); ok {
		args := strings.Fields(rest)
		return fmt.Errorf("command %q is not a program: put the program alone in command and its arguments in args, as in command: %s and args: [%s]",
			srv.Command, program, strings.Join(quoteAll(args), ", "))
	}
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("command %q not found on PATH (%v): install it, or write its absolute path in command", srv.Command, err)
	}
	return fmt.Errorf("command %s does not exist: fix command in the configuration", srv.Command)
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = fmt.Sprintf("%q", a)
	}
	return out
}
