package upstream

import (
	"context"
	"encoding/json"
	"log/slog"
)

// Prompt is an upstream prompt, kept as the server sent it.
type Prompt struct {
	Server string
	// Name is the prompt's name at its server; Exposed is the name clients see, made like a
	// tool's (see ExposedName).
	Name, Exposed string
	Raw           json.RawMessage
}

// listPrompts lists the server's prompts, if its capabilities say it has them, and reports
// whether the list is whole. A server that fails this list keeps its tools.
func (s *server) listPrompts(ctx context.Context, conn Conn, info Info) ([]Prompt, bool) {
	if !info.Prompts {
		return nil, true
	}
	raws, err := listPages(ctx, conn, "prompts/list", "prompts")
	if err != nil {
		s.listFailed(ctx, "upstream prompts not listed", "error", err)
	}
	return s.promptsFrom(raws), err == nil
}

// listFailed logs a list that failed: a warning, unless toolsift itself ended the list (it
// is closing: ctx is done), which is no news for the user.
func (s *server) listFailed(ctx context.Context, msg string, args ...any) {
	level := slog.LevelWarn
	if ctx.Err() != nil {
		level = slog.LevelDebug
	}
	s.log.Log(context.Background(), level, msg, args...)
}

// listExtras lists the server's prompts and resources; where a list fails, what the server
// had (listed before, or cached) stands: a list cut short, by a shutdown say, is no news that
// they are gone, and must not be cached as such.
func (s *server) listExtras(ctx context.Context, conn Conn, info Info) ([]Prompt, []Resource) {
	prompts, promptsOK := s.listPrompts(ctx, conn, info)
	resources, resourcesOK := s.listResources(ctx, conn, info)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !promptsOK {
		prompts = s.part.prompts
	}
	if !resourcesOK {
		resources = s.part.resources
	}
	return prompts, resources
}

// promptsFrom turns the server's raw prompts, listed or cached, into catalog prompts, named
// as its tools are.
func (s *server) promptsFrom(raws []json.RawMessage) []Prompt {
	var prompts []Prompt
	for _, raw := range raws {
		var pr struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &pr) == nil && pr.Name != "" {
			prompts = append(prompts, Prompt{Server: s.cfg.Name, Name: pr.Name, Exposed: ExposedName(s.cfg.Prefix, pr.Name), Raw: raw})
		}
	}
	return prompts
}
