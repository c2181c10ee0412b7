package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Issue 23, row 1: in HTTP mode nobody without a token can exhaust the service, and a token
// holder cannot hold it either.

const limitsToken = "0123456789abcdef-limits"

func limitsConfig(t *testing.T, extra string) string {
	return "auth: {tokens: [\"" + limitsToken + "\", \"fedcba9876543210-limits\"]}\n" + extra + "mcpServers:" + githubFixture(t, "")
}

// dialRaw opens a TCP connection to the service at url (http://host:port).
func dialRaw(t *testing.T, url string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the server closes c within d: a read ends in EOF or a reset
// rather than the deadline. Anything the server writes first is read and dropped.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

func authorizedInit(t *testing.T, url string) (time.Duration, int) {
	t.Helper()
	start := time.Now()
	resp := post(t, url+"/mcp", map[string]string{"Authorization": "Bearer " + limitsToken}, initBody)
	return time.Since(start), resp.StatusCode
}

func TestHTTPIdleConnectionsCannotExhaust(t *testing.T) {
	const max = 20
	url := serveHTTP(t, limitsConfig(t, fmt.Sprintf("maxConnections: %d\nreadTimeout: 2s\n", max)))

	// Sockets that send nothing: past the cap the longest waiting ones are closed, and a
	// client with a request is served at once.
	var idle []net.Conn
	for range 5 * max {
		idle = append(idle, dialRaw(t, url))
	}
	time.Sleep(200 * time.Millisecond)
	if d, code := authorizedInit(t, url); code != http.StatusOK || d > 2*time.Second {
		t.Errorf("initialize behind %d idle sockets: %d after %v, want 200 at once", len(idle), code, d)
	}
	closed := 0
	for _, c := range idle {
		if closedWithin(c, 50*time.Millisecond) {
			closed++
		}
	}
	if open := len(idle) - closed; open > max {
		t.Errorf("%d of %d idle sockets still open, want at most maxConnections (%d)", open, len(idle), max)
	}
	// The rest are closed once readTimeout passes without a request.
	for i, c := range idle {
		if !closedWithin(c, 4*time.Second) {
			t.Fatalf("idle socket %d still open past readTimeout", i)
		}
	}

	// A health check, with or without a token, does not keep its connection.
	c := dialRaw(t, url)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusOK || !resp.Close {
		t.Fatalf("/healthz: %v, %+v; want 200 with Connection: close", err, resp)
	}
	if !closedWithin(c, time.Second) {
		t.Error("/healthz kept its keep-alive connection open")
	}
	// Nor does a request refused for want of a token.
	c = dialRaw(t, url)
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(initBody), initBody)
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusUnauthorized || !closedWithin(c, time.Second) {
		t.Errorf("an unauthorized request kept its connection: %v, %v", err, resp)
	}
}

func TestHTTPSlowBodyIsCutOff(t *testing.T) {
	url := serveHTTP(t, limitsConfig(t, "readTimeout: 1s\n"))
	c := dialRaw(t, url)
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", limitsToken, len(initBody))
	start := time.Now()
	// One byte every 200 ms: the whole body would take over 30 s.
	go func() {
		for i := range len(initBody) {
			if _, err := c.Write([]byte{initBody[i]}); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	if !closedWithin(c, 5*time.Second) {
		t.Fatalf("a body sent a byte every 200 ms was still being read after 5 s (readTimeout 1s)")
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("cut off after %v, before readTimeout", d)
	}
	// An ordinary request is unaffected.
	if d, code := authorizedInit(t, url); code != http.StatusOK {
		t.Errorf("initialize after the slow body: %d after %v", code, d)
	}
}

func TestHTTPSessionsAreCapped(t *testing.T) {
	url := serveHTTP(t, limitsConfig(t, "maxSessions: 5\nmaxSessionsPerToken: 3\n"))
	open := func(token string) (*http.Response, string) {
		resp := post(t, url+"/mcp", map[string]string{"Authorization": "Bearer " + token}, initBody)
		return resp, resp.Header.Get("Mcp-Session-Id")
	}
	other := "fedcba9876543210-limits"
	var mine []string
	for i := range 3 {
		resp, id := open(limitsToken)
		if resp.StatusCode != http.StatusOK || id == "" {
			t.Fatalf("session %d: %d", i, resp.StatusCode)
		}
		mine = append(mine, id)
	}
	resp, _ := open(limitsToken)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a 4th session of one token: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// The other token has its own room, up to the total.
	for i := range 2 {
		if resp, _ := open(other); resp.StatusCode != http.StatusOK {
			t.Fatalf("other token's session %d: %d", i, resp.StatusCode)
		}
	}
	if resp, _ := open(other); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a 6th session in all: %d, want 503", resp.StatusCode)
	}
	// A legacy SSE stream opens a session too.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/sse", nil)
	req.Header.Set("Authorization", "Bearer "+other)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("an SSE stream past the cap: %v, %v; want 503", err, r)
	}
	// A session ended makes room.
	del, _ := http.NewRequest(http.MethodDelete, url+"/mcp", nil)
	del.Header.Set("Authorization", "Bearer "+limitsToken)
	del.Header.Set("Mcp-Session-Id", mine[0])
	if r, err := http.DefaultClient.Do(del); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %v, %v", err, r)
	}
	if resp, _ := open(limitsToken); resp.StatusCode != http.StatusOK {
		t.Errorf("a session after one ended: %d, want 200", resp.StatusCode)
	}
	// Requests within open sessions are not refused.
	r := post(t, url+"/mcp", map[string]string{"Authorization": "Bearer " + limitsToken, "Mcp-Session-Id": mine[1]}, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if r.StatusCode != http.StatusOK {
		t.Errorf("ping in an open session at the cap: %d", r.StatusCode)
	}
}
