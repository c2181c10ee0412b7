// Package mcptest holds what the tests of several packages share: calling a tool with
// mcp-go's client and reading the text of its result, and a buffer that a process or a
// logger writes while the test reads it.
package mcptest

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Call calls a tool and fails the test if no result comes back; an isError result is a
// result.
func Call(t testing.TB, c *client.Client, name string, args any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// Text joins the text items of a result's content.
func Text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// Buffer is a bytes.Buffer safe for one writer and many readers at once.
type Buffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
