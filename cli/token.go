package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/toolsift/toolsift/internal/apitoken"
	"github.com/toolsift/toolsift/internal/dirs"
)

const tokenUsage = `Usage: toolsift token create NAME
       toolsift token list
       toolsift token revoke NAME

Named bearer tokens for toolsift's HTTP service (toolsift serve --listen), for the machines
and people that call it: create prints the new token once; toolsift keeps only its SHA-256,
in its state folder ($XDG_STATE_HOME/toolsift/tokens.json, else
~/.local/state/toolsift/tokens.json). A running service takes a token created or revoked at
once. Once a token was created, every request must carry one (Authorization: Bearer
TOKEN), even after the last is revoked, as with auth.tokens in the configuration, which
still works beside them.
`

func init() {
	register(command{
		name: "token", summary: "named bearer tokens for the HTTP service, kept hashed (create NAME, list, revoke NAME)",
		help: tokenUsage, run: noStdin(tokenCmd),
	})
}

// namedTokens is the store of named tokens; nil without a state folder.
func namedTokens() *apitoken.Store {
	state, err := dirs.State()
	if err != nil {
		return nil
	}
	return apitoken.Open(filepath.Join(state, "tokens.json"))
}

// tokenCmd creates, lists and revokes named tokens: toolsift token create|list|revoke.
func tokenCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	pos, done, err := parseFlags(fs, args, stdout)
	if done || err != nil {
		return err
	}
	store := namedTokens()
	if store == nil {
		return fmt.Errorf("no state folder to keep tokens in: set XDG_STATE_HOME or HOME")
	}
	switch {
	case len(pos) == 2 && pos[0] == "create":
		tok, err := store.Create(ctx, pos[1])
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, tok)
		fmt.Fprintf(stderr, "toolsift: token %s created; it is shown this once (toolsift keeps only its hash): send it as Authorization: Bearer TOKEN\n", pos[1])
		return nil
	case len(pos) == 1 && pos[0] == "list":
		list, err := store.List()
		if err != nil {
			return err
		}
		if len(list) == 0 {
			fmt.Fprintln(stdout, "no tokens: make one with toolsift token create NAME")
			return nil
		}
		fmt.Fprintf(stdout, "%-24s %s\n", "NAME", "CREATED")
		for _, t := range list {
			fmt.Fprintf(stdout, "%-24s %s\n", t.Name, t.Created.Local().Format(time.DateTime))
		}
		return nil
	case len(pos) == 2 && pos[0] == "revoke":
		if err := store.Revoke(ctx, pos[1]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Revoked %s: requests with it are refused from now on.\n", pos[1])
		return nil
	}
	return fmt.Errorf("%w: toolsift token create NAME, toolsift token list, or toolsift token revoke NAME", errUsage)
}
