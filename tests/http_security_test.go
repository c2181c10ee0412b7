package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// sseStream opens a legacy SSE stream with token and returns its session's message path
// (from the endpoint event) and a function returning everything the stream carried so far.
func sseStream(t *testing.T, url, token string) (endpoint string, carried func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/sse", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /sse: %v %v", err, resp)
	}
	var mu sync.Mutex
	var got strings.Builder
	found := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			got.WriteString(line + "\n")
			mu.Unlock()
			if p, ok := strings.CutPrefix(line, "data: /message"); ok {
				select {
				case found <- "/message" + p:
				default:
				}
			}
		}
	}()
	select {
	case endpoint = <-found:
	case <-time.After(10 * time.Second):
		t.Fatal("no endpoint event on the SSE stream")
	}
	return endpoint, func() string { mu.Lock(); defer mu.Unlock(); return got.String() }
}

// TestSSESessionBelongsToItsTokenWhateverTheHeaders performs issue 39's attack 17: token B
// names its own streamable session in Mcp-Session-Id, and token A's SSE session in the
// query of /message. The gate checked the header's session; mcp-go served the query's, and
// A's stream carried B's answer.
func TestSSESessionBelongsToItsTokenWhateverTheHeaders(t *testing.T) {
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789ab"
	url := serveHTTP(t, fmt.Sprintf("auth: {tokens: [%q, %q]}\nmcpServers:%s", alice, bob, githubFixture(t, "")))
	endpoint, carried := sseStream(t, url, alice)
	if r := post(t, url+endpoint, map[string]string{"Authorization": "Bearer " + alice}, initBody); r.StatusCode/100 != 2 {
		t.Fatalf("alice's initialize: %d", r.StatusCode)
	}
	b := connectHTTP(t, url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + bob}))
	bobs := b.GetSessionId()
	if bobs == "" {
		t.Fatal("bob has no session")
	}
	for _, header := range []string{bobs, "mcp-session-00000000-0000-0000-0000-000000000000"} {
		r, body := do(t, http.MethodPost, url+endpoint, map[string]string{"Authorization": "Bearer " + bob, "Mcp-Session-Id": header},
			`{"jsonrpc":"2.0","id":4242,"method":"tools/list"}`)
		if r.StatusCode/100 == 2 {
			t.Errorf("bob's post into alice's SSE session with Mcp-Session-Id %s = %d %s, want it refused", header, r.StatusCode, body)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if s := carried(); strings.Contains(s, `"id":4242`) { // the answer, not an ID that happens to hold 4242
		t.Errorf("alice's stream carried bob's answer:\n%s", s)
	}
	// The owner still posts into her session, with or without a matching header.
	sid := strings.TrimPrefix(endpoint, "/message?sessionId=")
	for _, h := range []map[string]string{{}, {"Mcp-Session-Id": sid}} {
		h["Authorization"] = "Bearer " + alice
		if r := post(t, url+endpoint, h, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); r.StatusCode/100 != 2 {
			t.Errorf("alice's own post (%v) = %d", h, r.StatusCode)
		}
	}
}

// TestFailedInitializeTakesNoSessionPlace performs attack 18: initializes that mcp-go
// answers with an error each got a session ID and held one of the token's places, so a good
// client was refused with 503 until they idled out.
func TestFailedInitializeTakesNoSessionPlace(t *testing.T) {
	url := serveHTTP(t, limitsConfig(t, "maxSessions: 10\nmaxSessionsPerToken: 3\n"))
	auth := map[string]string{"Authorization": "Bearer " + limitsToken}
	for i := range 10 {
		r, body := do(t, http.MethodPost, url+"/mcp", auth, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":"not an object"}`)
		if r.StatusCode == http.StatusOK && !strings.Contains(string(body), `"error"`) {
			t.Fatalf("bad initialize %d was answered as a success: %s", i, body)
		}
		// The ID it may carry names no session.
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			h := map[string]string{"Authorization": auth["Authorization"], "Mcp-Session-Id": id}
			if r2, b2 := do(t, http.MethodPost, url+"/mcp", h, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); r2.StatusCode != http.StatusNotFound {
				t.Errorf("the session of a failed initialize answered %d %.120s, want 404", r2.StatusCode, b2)
			}
		}
	}
	for i := range 3 {
		if _, code := authorizedInit(t, url); code != http.StatusOK {
			t.Fatalf("good initialize %d after the failed ones: %d, want 200", i, code)
		}
	}
	if _, code := authorizedInit(t, url); code != http.StatusServiceUnavailable {
		t.Errorf("a 4th good session: %d, want 503 (the cap still holds)", code)
	}
}

// TestChunkedWithContentLengthIsRefused performs attack 19: a POST with both Content-Length
// and Transfer-Encoding: chunked, followed on the same connection by bytes that form a
// request of their own. RFC 9112 §6.1: refuse it and close the connection, so those bytes
// are never answered.
func TestChunkedWithContentLengthIsRefused(t *testing.T) {
	url := serveHTTP(t, limitsConfig(t, ""))
	host := strings.TrimPrefix(url, "http://")
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	smuggled := "GET /healthz HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
	for _, c := range []struct{ name, head string }{
		{"both", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"},
		{"both, other case and order", "transfer-encoding: chunked\r\ncontent-length: 4\r\n"},
		{"after a keep-alive request", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := dialRaw(t, url)
			head := c.head
			var first string
			if head == "" {
				// A clean request with a body first, so the attack is not the connection's first.
				first = "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + limitsToken +
					"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
					fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(initBody), initBody)
				head = "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"
			}
			req := first + "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + limitsToken +
				"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" + head + "\r\n" +
				fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body) + smuggled
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, _ := io.ReadAll(conn)
			statuses := strings.Count(string(got), "HTTP/1.1 ")
			want := 1
			if first != "" {
				want = 2
			}
			if !strings.Contains(string(got), "HTTP/1.1 400") || statuses != want {
				t.Errorf("answered with %d responses, want %d ending in a 400 and a close:\n%s", statuses, want, got)
			}
		})
	}
	// A chunked request alone is served, and its connection closed after the answer.
	conn := dialRaw(t, url)
	io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+host+"\r\nAuthorization: Bearer "+limitsToken+
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(initBody), initBody)+smuggled)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, _ := io.ReadAll(conn)
	if !strings.HasPrefix(string(got), "HTTP/1.1 200") || strings.Count(string(got), "HTTP/1.1 ") != 1 {
		t.Errorf("a chunked initialize: want one 200 and a close, got:\n%s", got)
	}
}
