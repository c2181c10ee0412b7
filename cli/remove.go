package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/toolsift/toolsift/config"
)

const removeUsage = `Usage: toolsift remove [--config FILE] [--project] NAME

Takes a server out of toolsift's configuration (the one toolsift serves, as for add),
leaving the rest of the file as it is; with --project, one of this project's servers. To
keep a server but not run it, write disabled: true under it instead.
`

func init() {
	register(command{
		name: "remove", summary: "take a server out of the configuration",
		help: removeUsage, run: noStdin(removeCmd),
	})
}

// removeCmd takes a server out of the configuration: toolsift remove NAME.
func removeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("remove", flag.ContinueOnError)
	configFile := fs.String("config", "", "")
	project := fs.Bool("project", false, "")
	rest, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("%w: name one server: toolsift remove NAME", errUsage)
	}
	file, err := findConfig(*configFile, warnTo(stderr))
	if err != nil {
		return err
	}
	where, dir := "", projectDir()
	if *project {
		where = ", for project " + dir
	}
	err = editConfig(ctx, file, func(data []byte) ([]byte, error) {
		if *project {
			return config.RemoveProjectServer(data, dir, rest[0])
		}
		out, err := config.RemoveServer(data, rest[0])
		if err != nil {
			if _, perr := config.RemoveProjectServer(data, dir, rest[0]); perr == nil {
				return nil, fmt.Errorf("%w; it is a server of project %s: toolsift remove --project %s", err, dir, rest[0])
			}
		}
		return out, err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Removed %s from %s%s.\n", rest[0], file, where)
	removed := rest[0]
	if *project {
		removed += " of project " + dir // as import --merge names it
	}
	if err := noteRemoved(ctx, file, removed); err != nil {
		fmt.Fprintf(stderr, "toolsift: not remembered as removed (an import --merge would bring it back without a word): %v\n", err)
	}
	return nil
}
