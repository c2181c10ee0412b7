// Command authclient is the client the official MCP conformance suite's client auth
// scenarios run: authclient SERVER_URL, with the scenario in MCP_CONFORMANCE_SCENARIO and its
// context (a pre-registered client's credentials, say) in MCP_CONFORMANCE_CONTEXT. It plays
// a toolsift user: it writes a configuration holding the server, signs in with
// toolsift auth login (the "browser" is the fixture's --browse, which approves at once),
// then connects through toolsift over stdio and calls the server's tool. A call that says
// to sign in again (a step-up) is answered by signing in again, a bounded number of times,
// as a user would. TOOLSIFT and FIXTURE name the binaries.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// cimdURL is the Client ID Metadata Document the suite's basic-cimd scenario expects.
const cimdURL = "https://conformance-test.local/client-metadata.json"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "authclient:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: authclient SERVER_URL")
	}
	serverURL := os.Args[1]
	toolsift, fixture := os.Getenv("TOOLSIFT"), os.Getenv("FIXTURE")
	work, err := os.MkdirTemp("", "authclient")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var ctxInfo struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &ctxInfo)
	cfg := fmt.Sprintf("mcpServers:\n  s:\n    url: %q\n    prefix: \"\"\n", serverURL)
	var oauth []string
	if ctxInfo.ClientID != "" {
		oauth = append(oauth, fmt.Sprintf("clientId: %q", ctxInfo.ClientID))
	}
	if ctxInfo.ClientSecret != "" {
		oauth = append(oauth, fmt.Sprintf("clientSecret: %q", ctxInfo.ClientSecret))
	}
	if os.Getenv("MCP_CONFORMANCE_SCENARIO") == "auth/basic-cimd" {
		oauth = append(oauth, fmt.Sprintf("clientMetadataUrl: %q", cimdURL))
	}
	if len(oauth) > 0 {
		cfg += "    oauth: {" + strings.Join(oauth, ", ") + "}\n"
	}
	cfgFile := filepath.Join(work, "toolsift.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		return err
	}
	env := append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(work, "state"), "XDG_CACHE_HOME="+filepath.Join(work, "cache"),
		"TOOLSIFT_TOKEN_STORE=file", "BROWSER="+fixture+" --browse")
	login := func() error {
		cmd := exec.Command(toolsift, "auth", "login", "s", "--config", cfgFile, "--timeout", "20s")
		cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stderr, os.Stderr
		return cmd.Run()
	}
	if err := login(); err != nil {
		return fmt.Errorf("auth login: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	c, err := client.NewStdioMCPClientWithOptions(toolsift, env, []string{"--config", cfgFile})
	if err != nil {
		return err
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "authclient", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return err
	}
	// Signing in again is the user's move; a server that asks without end gets two.
	for logins := 1; ; logins++ {
		res, err := callTool(ctx, c)
		if err != nil {
			return err
		}
		text := textOf(res)
		if !res.IsError {
			fmt.Println(text)
			return nil
		}
		if !strings.Contains(text, "toolsift auth login s") || logins > 2 {
			return fmt.Errorf("test-tool: %s", text)
		}
		if err := login(); err != nil {
			return fmt.Errorf("auth login again: %w", err)
		}
	}
}

// callTool calls the server's test-tool through call_tool, waiting for it to connect.
func callTool(ctx context.Context, c *client.Client) (*mcp.CallToolResult, error) {
	for {
		req := mcp.CallToolRequest{}
		req.Params.Name = "call_tool"
		req.Params.Arguments = map[string]any{"name": "test-tool", "arguments": map[string]any{}}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return nil, err
		}
		// A server still connecting is not known yet.
		if res.IsError && strings.Contains(textOf(res), "unknown tool") && ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		return res, nil
	}
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
