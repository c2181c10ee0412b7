package config

import (
	"errors"
	"strings"
	"testing"
)

func TestAddServer(t *testing.T) {
	memory := Entry{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}}
	tests := []struct {
		name, src string
		add       string
		e         Entry
		want      string // the whole file after, or the error
	}{
		{"after the last server, comments kept", "# my servers\nmcpServers:\n  # the fs one\n  fs:\n    command: x # inline\n    args: [a]\nlisten: 127.0.0.1:1\n", "memory", memory,
			"# my servers\nmcpServers:\n  # the fs one\n  fs:\n    command: x # inline\n    args: [a]\n  memory:\n    command: npx\n    args: [\"-y\", \"@modelcontextprotocol/server-memory\"]\nlisten: 127.0.0.1:1\n"},
		{"four-space indent", "mcpServers:\n    fs:\n        command: x\n", "memory", Entry{Command: "m"},
			"mcpServers:\n    fs:\n        command: x\n    memory:\n      command: m\n"},
		{"block scalar last", "mcpServers:\n  fs:\n    command: x\n    description: |\n      two\n      lines\n", "m", Entry{Command: "m"},
			"mcpServers:\n  fs:\n    command: x\n    description: |\n      two\n      lines\n  m:\n    command: m\n"},
		{"remote with header", "mcpServers:\n  fs:\n    command: x\n", "jira", Entry{Type: "http", URL: "https://jira.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${JIRA_TOKEN}"}},
			"mcpServers:\n  fs:\n    command: x\n  jira:\n    type: http\n    url: \"https://jira.example.com/mcp\"\n    headers:\n      Authorization: \"Bearer ${JIRA_TOKEN}\"\n"},
		{"env sorted", "mcpServers:\n  fs:\n    command: x\n", "gh", Entry{Command: "gh-mcp", Env: map[string]string{"B": "2", "A": "${A}"}},
			"mcpServers:\n  fs:\n    command: x\n  gh:\n    command: gh-mcp\n    env:\n      A: \"${A}\"\n      B: \"2\"\n"},
		{"no servers key", "listen: 127.0.0.1:1\n", "m", Entry{Command: "m"}, "listen: 127.0.0.1:1\nmcpServers:\n  m:\n    command: m\n"},
		{"empty file", "", "m", Entry{Command: "m"}, "mcpServers:\n  m:\n    command: m\n"},
		{"empty mapping", "mcpServers: {}\n", "m", Entry{Command: "m"}, "mcpServers: {m: {command: m}}\n"},
		{"json", `{"mcpServers": {"fs": {"command": "x"}}}`, "m", Entry{Command: "m"}, "{\"mcpServers\": {\"fs\": {\"command\": \"x\"}, m: {command: m}}}\n"},
		{"no trailing newline", "mcpServers:\n  fs:\n    command: x", "m", Entry{Command: "m"}, "mcpServers:\n  fs:\n    command: x\n  m:\n    command: m\n"},
		{"name taken", "mcpServers:\n  m:\n    command: x\n", "m", Entry{Command: "m"}, `server "m" is already in the configuration`},
		{"a name YAML would read as a bool", "mcpServers:\n  fs:\n    command: x\n", "true", Entry{Command: "m"}, "mcpServers:\n  fs:\n    command: x\n  \"true\":\n    command: m\n"},
		{"broken file", "mcpServers:\n  fs: [\n", "m", Entry{Command: "m"}, "the configuration does not parse; fix it first"},
		{"servers a list", "mcpServers: [a]\n", "m", Entry{Command: "m"}, "mcpServers is not a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := AddServer([]byte(tt.src), tt.add, tt.e)
			if err != nil {
				if !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				return
			}
			if string(out) != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", out, tt.want)
			}
			if _, err := Parse("c.yaml", out, nil); err != nil {
				t.Errorf("the result does not load: %v", err)
			}
		})
	}
	if _, err := AddServer([]byte("mcpServers:\n  m:\n    command: x\n"), "m", Entry{Command: "y"}); !errors.Is(err, ErrExists) {
		t.Errorf("taken name: %v, want ErrExists", err)
	}
}

func TestRemoveServer(t *testing.T) {
	tests := []struct {
		name, src, remove, want string
	}{
		{"middle, with its comment", "mcpServers:\n  a:\n    command: x\n  # b is old\n  b:\n    command: y\n    args: [1]\n  # c next\n  c:\n    command: z\n",
			"b", "mcpServers:\n  a:\n    command: x\n  # c next\n  c:\n    command: z\n"},
		{"last of several", "mcpServers:\n  a:\n    command: x\n  b:\n    command: y\nlisten: 127.0.0.1:1 # keep\n",
			"b", "mcpServers:\n  a:\n    command: x\nlisten: 127.0.0.1:1 # keep\n"},
		{"first", "# top\nmcpServers:\n  a:\n    command: x\n  b:\n    command: y\n",
			"a", "# top\nmcpServers:\n  b:\n    command: y\n"},
		{"the only one", "mcpServers:\n  a:\n    command: x\n", "a", "mcpServers: {}\n"},
		{"json", `{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}`, "a", "{\"mcpServers\": {\"b\": {\"command\": \"y\"}}}\n"},
		{"not there", "mcpServers:\n  a:\n    command: x\n  b:\n    command: y\n", "c", `server "c" is not in the configuration; it has: a, b`},
		{"no servers", "listen: x\n", "a", `server "a" is not in the configuration (it has no servers)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := RemoveServer([]byte(tt.src), tt.remove)
			if err != nil {
				if !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				return
			}
			if string(out) != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", out, tt.want)
			}
		})
	}
}

func TestMergeServers(t *testing.T) {
	mine := "# mine\nmcpServers:\n  fs:\n    command: x # keep\n"
	imported := "mcpServers:\n  fs:\n    command: other\n  # github: note from import\n  github:\n    command: npx\n    args: [\"-y\", \"gh\"]\n  memory:\n    command: m\n"
	out, added, err := MergeServers([]byte(mine), []byte(imported))
	if err != nil {
		t.Fatal(err)
	}
	want := "# mine\nmcpServers:\n  fs:\n    command: x # keep\n  # github: note from import\n  github:\n    command: npx\n    args: [\"-y\", \"gh\"]\n  memory:\n    command: m\n"
	if string(out) != want || strings.Join(added, ",") != "github,memory" {
		t.Errorf("got %q (added %q), want\n%s", out, added, want)
	}
	if out, added, err := MergeServers([]byte(mine), []byte("mcpServers: {}\n")); err != nil || string(out) != mine || len(added) != 0 {
		t.Errorf("nothing to merge: %q %q %v", out, added, err)
	}
}

func TestAddProjectServer(t *testing.T) {
	e := Entry{Command: "pg-mcp"}
	tests := []struct{ name, src, want string }{
		{"no projects yet", "mcpServers:\n  fs:\n    command: x\n# end\n",
			"mcpServers:\n  fs:\n    command: x\nprojects:\n  /p:\n    mcpServers:\n      pg:\n        command: pg-mcp\n# end\n"},
		{"another project", "mcpServers: {}\nprojects:\n  /q:\n    mcpServers:\n      a:\n        command: a\n",
			"mcpServers: {}\nprojects:\n  /q:\n    mcpServers:\n      a:\n        command: a\n  /p:\n    mcpServers:\n      pg:\n        command: pg-mcp\n"},
		{"the project, with a comment kept", "mcpServers: {}\nprojects:\n  /p:\n    mcpServers:\n      # mine\n      a:\n        command: a\n",
			"mcpServers: {}\nprojects:\n  /p:\n    mcpServers:\n      # mine\n      a:\n        command: a\n      pg:\n        command: pg-mcp\n"},
		{"empty file", "", "mcpServers: {}\nprojects:\n  /p:\n    mcpServers:\n      pg:\n        command: pg-mcp\n"},
		{"taken", "mcpServers: {}\nprojects:\n  /p:\n    mcpServers:\n      pg:\n        command: a\n", `server "pg" of project /p is already in the configuration`},
		{"projects not a mapping", "mcpServers: {}\nprojects: [a]\n", "projects is not a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := AddProjectServer([]byte(tt.src), "/p", "pg", e)
			if err != nil {
				if !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				return
			}
			if string(out) != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", out, tt.want)
			}
			cfg, err := Parse("c.yaml", out, nil)
			if err != nil || len(cfg.Projects["/p"]) == 0 {
				t.Errorf("the result does not load with the project's server: %v", err)
			}
		})
	}
}

func TestRemoveProjectServer(t *testing.T) {
	src := "mcpServers:\n  pg:\n    command: global\nprojects:\n  /p:\n    mcpServers:\n      pg:\n        command: a\n      # b's\n      b:\n        command: b\n"
	out, err := RemoveProjectServer([]byte(src), "/p", "pg")
	if want := "mcpServers:\n  pg:\n    command: global\nprojects:\n  /p:\n    mcpServers:\n      # b's\n      b:\n        command: b\n"; err != nil || string(out) != want {
		t.Errorf("got %q, %v; want\n%s", out, err, want)
	}
	if _, err := RemoveProjectServer([]byte(src), "/q", "pg"); err == nil || !strings.Contains(err.Error(), "no servers for project /q") {
		t.Errorf("another project: %v", err)
	}
	if _, err := RemoveProjectServer([]byte(src), "/p", "c"); err == nil || !strings.Contains(err.Error(), `server "c" is not in the configuration for project /p; it has: pg, b`) {
		t.Errorf("not there: %v", err)
	}
}

// TestMergeProjectServers: a merge adds a project's servers the file lacks too, as import
// writes them under projects.
func TestMergeProjectServers(t *testing.T) {
	mine := "mcpServers:\n  fs:\n    command: x\nprojects:\n  /p:\n    mcpServers:\n      pg:\n        command: pg-mcp\n"
	imported := "mcpServers:\n  fs:\n    command: x\nprojects:\n  /p:\n    mcpServers:\n      pg:\n        command: other\n      notes:\n        command: notes-mcp\n  /q:\n    mcpServers:\n      web:\n        command: web-mcp\n"
	out, added, err := MergeServers([]byte(mine), []byte(imported))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(added, ","); got != "notes of project /p,web of project /q" {
		t.Errorf("added %q", got)
	}
	cfg, err := Parse("c.yaml", out, nil)
	if err != nil {
		t.Fatalf("the merge does not load: %v\n%s", err, out)
	}
	if p := cfg.Projects["/p"]; len(p) != 2 || p[0].Command != "pg-mcp" || p[1].Name != "notes" || len(cfg.Projects["/q"]) != 1 {
		t.Errorf("projects after the merge: %+v\n%s", cfg.Projects, out)
	}
}
