package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/toolsift/toolsift/config"
)

const addUsage = `Usage: toolsift add [--config FILE] [--project] [-e KEY=VALUE]... NAME -- COMMAND [ARGS...]
       toolsift add [--config FILE] [--project] [--type http|sse] [-H "Name: value"]... NAME --url URL

Adds a server to toolsift's configuration, as claude mcp add adds one to Claude Code's: a
program toolsift starts (after --), or a remote server (--url). The rest of the file,
comments included, is left as it is. The configuration is the one toolsift serves: --config
FILE, else ./toolsift.yaml if approved, else ~/.config/toolsift/config.yaml (made if there is
none). Clients see the server from the next session toolsift serves.

Write a secret as ${VAR} (quote it in the shell: -e 'GITHUB_TOKEN=${GITHUB_TOKEN}') so that
the file holds the variable's name, not its value.

Flags:
  --config FILE      the configuration to change
  --project          serve it only in this project (the working directory, or Claude
                     Code's CLAUDE_PROJECT_DIR): under projects in the configuration
  -e KEY=VALUE       an environment variable for the program (repeatable)
  --url URL          a remote server's address
  --type TYPE        http (streamable HTTP, the default) or sse
  -H "Name: value"   an HTTP header for a remote server (repeatable)
`

func init() {
	register(command{
		name: "add", summary: "add a server to the configuration: add NAME -- COMMAND ARGS..., or add NAME --url URL",
		help: addUsage, run: noStdin(addCmd),
	})
}

// addCmd adds a server to the configuration: toolsift add NAME -- COMMAND ARGS... or
// toolsift add NAME --url URL.
func addCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var command []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
	}
	fs := flag.NewFlagSet("add", flag.ContinueOnError)
	configFile := fs.String("config", "", "")
	project := fs.Bool("project", false, "")
	url := fs.String("url", "", "")
	typ := fs.String("type", "", "")
	var env, headers repeated
	fs.Var(&env, "e", "")
	fs.Var(&headers, "H", "")
	rest, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("%w: name one server: toolsift add NAME -- COMMAND [ARGS...], or toolsift add NAME --url URL", errUsage)
	}
	name := rest[0]
	var e config.Entry
	switch {
	case *url != "" && len(command) > 0:
		return fmt.Errorf("%w: give a command after -- or --url, not both", errUsage)
	case *url != "":
		if len(env) > 0 {
			return fmt.Errorf("%w: -e sets a program's environment; a remote server takes headers: -H \"Name: value\"", errUsage)
		}
		e = config.Entry{Type: *typ, URL: *url}
		if e.Headers, err = pairs(headers, ":", "-H", `"Authorization: Bearer ${TOKEN}"`); err != nil {
			return err
		}
	case len(command) > 0:
		if *typ != "" || len(headers) > 0 {
			return fmt.Errorf("%w: --type and -H are for a remote server (--url)", errUsage)
		}
		e = config.Entry{Command: command[0], Args: command[1:]}
		if e.Env, err = pairs(env, "=", "-e", "KEY=VALUE"); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: say what %s is: toolsift add %s -- COMMAND [ARGS...] (a program, such as npx -y @modelcontextprotocol/server-memory), or toolsift add %s --url URL", errUsage, name, name, name)
	}
	file, err := editableConfig(*configFile, stderr)
	if err != nil {
		return err
	}
	where, flag := "", ""
	if *project {
		where, flag = ", for project "+projectDir(), " --project"
	}
	err = editConfig(ctx, file, func(data []byte) ([]byte, error) {
		if *project {
			return config.AddProjectServer(data, projectDir(), name, e)
		}
		return config.AddServer(data, name, e)
	})
	if errors.Is(err, config.ErrExists) {
		return fmt.Errorf("%s: %w; to replace it, run toolsift remove%s %s first", file, err, flag, name)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Added %s to %s%s.\nCheck it with: toolsift status --config %s\n", name, file, where, file)
	return nil
}
