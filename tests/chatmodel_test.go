package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// What the scripted chat model (chatModel) and the client tests that use it agree on.
const (
	chatPrompt   = "Find the echo tool with toolsift and echo hello-from-model."
	chatMessage  = "hello-from-model"
	chatFinal    = "The echo tool answered."
	chatSearchID = "call_search_1"
	chatEchoID   = "call_echo_1"
)

// chatRequest is one chat completions request, as far as the script reads it.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"` // a string, or a list of parts
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`

	raw []byte // the body as sent
}

func chatText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// declared returns the names of the tools the request offers the model.
func (r chatRequest) declared() []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// toolResult returns what the request tells the model tool call id returned.
func (r chatRequest) toolResult(id string) (string, bool) {
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return chatText(m.Content), true
		}
	}
	return "", false
}

func (r chatRequest) hasResult(id string) bool {
	_, ok := r.toolResult(id)
	return ok
}

func (r chatRequest) hasUser(s string) bool {
	for _, m := range r.Messages {
		if m.Role == "user" && strings.Contains(chatText(m.Content), s) {
			return true
		}
	}
	return false
}

// chatModel is a scripted OpenAI-compatible chat completions API that records every
// request, for the clients that speak it (opencode, Copilot CLI). It answers by what a
// request carries, not by its order: opencode asks for the session's title on the side,
// concurrently with the first turn. Its script: search with select:fx__echo by the
// client's name for tool_search, then call the match by the client's name for it (echo)
// or, without one, through call_tool, then end.
type chatModel struct {
	search, call, echo string // the client's names for tool_search, call_tool, fx__echo

	mu   sync.Mutex
	reqs []chatRequest
	odd  []string // requests to anything but POST /v1/chat/completions
}

func (m *chatModel) requests() []chatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// summary lists the requests received: those to anything but the chat completions, then each
// one's declared tools and its messages, cut at 300 bytes.
func (m *chatModel) summary() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, o := range m.odd {
		fmt.Fprintf(&b, "unexpected %s\n", o)
	}
	for i, r := range m.reqs {
		fmt.Fprintf(&b, "%d. declares %q\n", i+1, r.declared())
		for _, msg := range r.Messages {
			text := chatText(msg.Content)
			if len(text) > 300 {
				text = text[:300] + "…"
			}
			fmt.Fprintf(&b, "   %s %s: %s\n", msg.Role, msg.ToolCallID, text)
		}
	}
	return b.String()
}

func (m *chatModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		m.mu.Lock()
		m.odd = append(m.odd, r.Method+" "+r.URL.Path)
		m.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	var req chatRequest
	req.raw, _ = io.ReadAll(r.Body)
	if err := json.Unmarshal(req.raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()

	// Latest step first: each request carries the whole conversation so far.
	switch {
	case req.hasResult(chatEchoID):
		writeChatCompletion(w, req, chatFinal, nil)
	case req.hasResult(chatSearchID):
		// The unlocked tool by the client's own name for it, if set; else through call_tool.
		call := &chatToolCall{id: chatEchoID, name: m.call,
			args: map[string]any{"name": "fx__echo", "arguments": map[string]any{"message": chatMessage}}}
		if m.echo != "" {
			call = &chatToolCall{id: chatEchoID, name: m.echo, args: map[string]any{"message": chatMessage}}
		}
		writeChatCompletion(w, req, "", call)
	case req.hasUser(chatPrompt) && slices.Contains(req.declared(), m.search):
		writeChatCompletion(w, req, "", &chatToolCall{id: chatSearchID, name: m.search,
			args: map[string]any{"query": "select:fx__echo"}})
	default: // a title, or a turn off the script: end it
		writeChatCompletion(w, req, "Echo via toolsift", nil)
	}
}

// checkScript checks what the scripted model was sent over a run of its script: the prompt
// with tool_search declared and the unlocked tool (echo, the client's name for fx__echo) not
// yet; the unlocked tool declared in the request that carries the search result; the
// fixture's echo of the message in the request after the call (made by the name called).
func (m *chatModel) checkScript(t *testing.T, echo, called string) {
	t.Helper()
	reqs := m.requests()
	first := slices.IndexFunc(reqs, func(r chatRequest) bool {
		return r.hasUser(chatPrompt) && slices.Contains(r.declared(), m.search)
	})
	afterSearch := slices.IndexFunc(reqs, func(r chatRequest) bool { return r.hasResult(chatSearchID) })
	afterEcho := slices.IndexFunc(reqs, func(r chatRequest) bool { return r.hasResult(chatEchoID) })
	if first < 0 {
		t.Fatalf("no model request carried the prompt and declared %s", m.search)
	}
	if d := reqs[first].declared(); slices.Contains(d, echo) {
		t.Errorf("%s was declared before any search, so the test proves nothing: %q", echo, d)
	}
	if afterSearch < 0 {
		t.Fatalf("no model request carried the result of %s", m.search)
	}
	if d := reqs[afterSearch].declared(); !slices.Contains(d, echo) {
		t.Errorf("the request carrying the search result does not declare the unlocked %s: %q", echo, d)
	}
	if afterEcho < 0 {
		t.Fatalf("no model request carried the result of %s", called)
	}
	// The fixture's echo answers {"tool": …, "arguments": …}; toolsift passes it through.
	result, _ := reqs[afterEcho].toolResult(chatEchoID)
	var echoed struct {
		Tool      string `json:"tool"`
		Arguments struct {
			Message string `json:"message"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(result), &echoed); err != nil || echoed.Tool != "echo" || echoed.Arguments.Message != chatMessage {
		t.Errorf("the result the model got for %s is not the fixture's echo of %q: %s", called, chatMessage, result)
	}
}

type chatToolCall struct {
	id, name string
	args     map[string]any
}

// writeChatCompletion answers with text or, if call is set, with that tool call,
// streamed as server-sent events or as one JSON object, as the request asks.
func writeChatCompletion(w http.ResponseWriter, req chatRequest, text string, call *chatToolCall) {
	finish := "stop"
	message := map[string]any{"role": "assistant", "content": text}
	if call != nil {
		args, _ := json.Marshal(call.args)
		finish = "tool_calls"
		message = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": call.id, "type": "function",
			"function": map[string]any{"name": call.name, "arguments": string(args)},
		}}}
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	chunk := func(object string, choice map[string]any, u any) map[string]any {
		return map[string]any{"id": "chatcmpl-scripted", "object": object, "created": time.Now().Unix(),
			"model": req.Model, "choices": []any{choice}, "usage": u}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(chunk("chat.completion",
			map[string]any{"index": 0, "message": message, "finish_reason": finish}, usage))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriter(w)
	for _, c := range []map[string]any{
		chunk("chat.completion.chunk", map[string]any{"index": 0, "delta": message, "finish_reason": nil}, nil),
		chunk("chat.completion.chunk", map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}, usage),
	} {
		b, _ := json.Marshal(c)
		fmt.Fprintf(bw, "data: %s\n\n", b)
	}
	fmt.Fprint(bw, "data: [DONE]\n\n")
	bw.Flush()
}
