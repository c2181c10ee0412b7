package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// fakeTransport answers tools/list from pages and holds tools/call until the caller gives up.
type fakeTransport struct {
	pages map[string]string // cursor → result

	mu    sync.Mutex
	notes []mcp.JSONRPCNotification
}

func (f *fakeTransport) Start(context.Context) error { return nil }
func (f *fakeTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	switch req.Method {
	case "tools/list":
		cursor := ""
		if p, ok := req.Params.(map[string]string); ok {
			cursor = p["cursor"]
		}
		page, ok := f.pages[cursor]
		if !ok {
			return &transport.JSONRPCResponse{ID: req.ID, Error: &mcp.JSONRPCErrorDetails{Code: -32602, Message: "bad cursor"}}, nil
		}
		return &transport.JSONRPCResponse{ID: req.ID, Result: json.RawMessage(page)}, nil
	case "tools/call":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, transport.ErrTransportClosed
}
func (f *fakeTransport) SendNotification(_ context.Context, n mcp.JSONRPCNotification) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notes = append(f.notes, n)
	return nil
}
func (f *fakeTransport) SetNotificationHandler(func(mcp.JSONRPCNotification)) {}
func (f *fakeTransport) Close() error                                         { return nil }
func (f *fakeTransport) GetSessionId() string                                 { return "" }

func TestConnListToolsFollowsCursors(t *testing.T) {
	tr := &fakeTransport{pages: map[string]string{
		"":   `{"tools":[{"name":"a"}],"nextCursor":"p2"}`,
		"p2": `{"tools":[{"name":"b"},{"name":"c"}],"nextCursor":"p3"}`,
		"p3": `{"tools":[{"name":"d"}]}`,
	}}
	c := &conn{tr: tr}
	tools, err := listPages(context.Background(), c, "tools/list", "tools")
	if err != nil || len(tools) != 4 {
		t.Fatalf("ListTools = %d tools, %v", len(tools), err)
	}
	tr.pages["p3"] = `{"tools":[],"nextCursor":"p2"}` // a server whose cursors loop
	if _, err := listPages(context.Background(), c, "tools/list", "tools"); err == nil || !strings.Contains(err.Error(), "repeats") {
		t.Errorf("looping cursors: err = %v", err)
	}
	tr.pages[""] = `{"tools":[],"nextCursor":"gone"}`
	var rpc *RPCError
	if _, err := listPages(context.Background(), c, "tools/list", "tools"); !errors.As(err, &rpc) || rpc.Code != -32602 {
		t.Errorf("error answer: err = %v", err)
	}
}

// TestListPagesDecodesItsList: a page is decoded once; only the list asked for can make it
// fail, and whatever else a page holds is no concern of it.
func TestListPagesDecodesItsList(t *testing.T) {
	tests := []struct {
		page  string
		tools int
		err   string // in the error; "" for none
	}{
		{`{"tools":[{"name":"a"},{"name":"b"}]}`, 2, ""},
		{`{"tools":[{"name":"a"}],"resources":3,"prompts":{"x":1}}`, 1, ""},
		{`{"tools":[{"name":"a"}],"nextCursor":5}`, 1, ""},
		{`{"tools":null}`, 0, ""},
		{`{}`, 0, ""},
		{`null`, 0, ""},
		{`{"tools":"a"}`, 0, "decoding tools"},
		{`{"tools":{"name":"a"}}`, 0, "decoding tools"},
		{`[{"name":"a"}]`, 0, "decoding result"},
		{`{"tools":[{"name":"a"}]`, 0, "decoding result"},
	}
	for _, tt := range tests {
		c := &conn{tr: &fakeTransport{pages: map[string]string{"": tt.page}}}
		tools, err := listPages(context.Background(), c, "tools/list", "tools")
		if len(tools) != tt.tools || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("listPages(%s) = %d tools, %v; want %d, %q", tt.page, len(tools), err, tt.tools, tt.err)
		}
	}
}

// TestConnCancelsUpstream checks that a call the caller abandons is cancelled upstream with
// notifications/cancelled naming the request.
func TestConnCancelsUpstream(t *testing.T) {
	tr := &fakeTransport{}
	c := &conn{tr: tr}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Request(ctx, "tools/call", json.RawMessage(`{"name":"slow"}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CallTool = %v, want the context's error", err)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.notes) != 1 || tr.notes[0].Method != "notifications/cancelled" {
		t.Fatalf("notifications sent upstream = %+v", tr.notes)
	}
	if id := tr.notes[0].Params.AdditionalFields["requestId"]; id == nil {
		t.Errorf("notifications/cancelled lacks requestId: %+v", tr.notes[0].Params)
	}
}
