package config

import (
	"strings"
	"testing"
)

func TestAddKeywords(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, wantErr string
	}{
		{"no tools yet", "# mine\nmcpServers:\n  jira:\n    url: https://j/mcp # here\n",
			"# mine\nmcpServers:\n  jira:\n    url: https://j/mcp # here\n    tools:\n      create_issue:\n        keywords: [open, ticket]\n", ""},
		{"tool without keywords", "mcpServers:\n  jira:\n    url: https://j/mcp\n    tools:\n      create_issue:\n        description: File it\n",
			"mcpServers:\n  jira:\n    url: https://j/mcp\n    tools:\n      create_issue:\n        description: File it\n        keywords: [open, ticket]\n", ""},
		{"keywords there", "mcpServers:\n  jira:\n    url: https://j/mcp\n    tools:\n      create_issue: {keywords: [bug, ticket]}\n",
			"keywords: [bug, ticket, open]", ""},
		{"all there already", "mcpServers:\n  jira:\n    url: https://j/mcp\n    tools:\n      create_issue: {keywords: [open, ticket]}\n",
			"create_issue: {keywords: [open, ticket]}\n", ""},
		{"hostile: no such server", "mcpServers:\n  jira:\n    url: https://j/mcp\n", "", "mcpServers.slack: no such server"},
		{"hostile: keywords not a list", "mcpServers:\n  jira:\n    url: https://j/mcp\n    tools:\n      create_issue: {keywords: open}\n", "", "keywords is not a list"},
		{"hostile: tool not a mapping", "mcpServers:\n  jira:\n    url: https://j/mcp\n    tools:\n      create_issue: 3\n", "", "is not a mapping"},
		{"hostile: broken file", "mcpServers: [\n", "", "does not parse"},
	} {
		server := "jira"
		if strings.Contains(tc.name, "no such server") {
			server = "slack"
		}
		out, err := AddKeywords([]byte(tc.in), server, "create_issue", []string{"open", "ticket"})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s:\n%s, %v\nwant it to hold\n%s", tc.name, out, err, tc.want)
			continue
		}
		cfg, err := Parse("c.yaml", out, env(nil))
		if err != nil {
			t.Errorf("%s: the result does not parse: %v\n%s", tc.name, err, out)
			continue
		}
		if kw := cfg.Servers[0].Tools["create_issue"].Keywords; !contains(kw, "open") || !contains(kw, "ticket") {
			t.Errorf("%s: keywords %v", tc.name, kw)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
