package tests

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/internal/mcptest"
)

// otlpReceiver takes OTLP/HTTP trace exports and keeps their bodies.
type otlpReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex // guards bodies
	bodies [][]byte
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	o := &otlpReceiver{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" {
			o.mu.Lock()
			o.bodies = append(o.bodies, body)
			o.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// has reports whether an export holds every one of parts.
func (o *otlpReceiver) has(parts ...[]byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	all := bytes.Join(o.bodies, nil)
	for _, p := range parts {
		if !bytes.Contains(all, p) {
			return false
		}
	}
	return true
}

// tracedServer is an MCP server over streamable HTTP whose tool echo reports the trace
// context its call came with: the traceparent header, and the one in _meta.
func tracedServer(t *testing.T) string {
	type headerKey struct{}
	s := server.NewMCPServer("traced", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.Tool{Name: "echo", Description: "Echoes the trace context of the call.", RawInputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var meta any
			if req.Params.Meta != nil {
				meta = req.Params.Meta.AdditionalFields["traceparent"]
			}
			return mcp.NewToolResultText(fmt.Sprintf("header=%v meta=%v", ctx.Value(headerKey{}), meta)), nil
		})
	h := server.NewStreamableHTTPServer(s, server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, headerKey{}, r.Header.Get("traceparent"))
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestMetricsAndTraces (issue 34): /metrics is protected like the rest, passes promtool
// check metrics, counts searches (hits and misses), calls by server and outcome, and
// upstream states, and is scraped by a real Prometheus; with tracing on, the trace context a
// client sends in _meta reaches the HTTP upstream (header and _meta), and the spans of the
// search and the call reach an OTLP receiver in that trace.
func TestMetricsAndTraces(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install Debian's prometheus package (apt-get install prometheus; .ci/run does)")
	}
	otlp := newOTLPReceiver(t)
	const tok = "metrics-test-token-0123456789"
	url := serveHTTP(t, fmt.Sprintf("auth: {tokens: [%q]}\ntracing: {otlpEndpoint: %q}\nmcpServers:%s\n  traced:\n    url: %s\n", tok, otlp.srv.URL, githubFixture(t, ""), tracedServer(t)))
	c := connectHTTP(t, url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tok}))

	traceID := "4bf92f3577b34da6a3ce929d0e0e4736"
	parent := "00-" + traceID + "-00f067aa0ba902b7-01"
	withTrace := func(name string, args map[string]any) *mcp.CallToolResult {
		req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args, Meta: &mcp.Meta{AdditionalFields: map[string]any{"traceparent": parent}}}}
		res, err := c.CallTool(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	withTrace("tool_search", map[string]any{"query": "create issue"})
	mcptest.Call(t, c.Client, "tool_search", map[string]any{"query": "zzqx flurble"})
	got := mcptest.Text(withTrace("traced__echo", map[string]any{}))
	if !strings.Contains(got, "header=00-"+traceID+"-") || !strings.Contains(got, "meta=00-"+traceID+"-") {
		t.Errorf("the upstream got the trace context %q, want trace %s in its header and _meta", got, traceID)
	}
	id, _ := hex.DecodeString(traceID)
	eventually(t, 10*time.Second, "the spans of the search and the call at the OTLP receiver", func() bool {
		return otlp.has(id, []byte("tools/call tool_search"), []byte("tools/call traced__echo"))
	})

	// /metrics: a token needed, the text well-formed, the counts right.
	if resp, _ := do(t, http.MethodGet, url+"/metrics", nil, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %d", resp.StatusCode)
	}
	resp, body := do(t, http.MethodGet, url+"/metrics", map[string]string{"Authorization": "Bearer " + tok}, "")
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = bytes.NewReader(body)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	for _, want := range []string{
		`toolsift_searches_total{result="hit"} 1`,
		`toolsift_searches_total{result="miss"} 1`,
		`toolsift_tool_calls_total{outcome="ok",server="traced"} 1`,
		`toolsift_upstream_state{server="github",state="connected"} 1`,
		`toolsift_upstream_tools{server="traced"} 1`,
		`toolsift_sessions 1`,
		`toolsift_tool_call_duration_seconds_count{server="traced"} 1`,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// A real Prometheus scrapes it.
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not found: install Debian's prometheus package (apt-get install prometheus; .ci/run does)")
	}
	dir := t.TempDir()
	target := strings.TrimPrefix(url, "http://")
	promCfg := fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs:\n- job_name: toolsift\n  authorization: {credentials: %q}\n  static_configs: [{targets: [%q]}]\n", tok, target)
	os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(promCfg), 0o600)
	port := freePort(t)
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	var promLog bytes.Buffer
	cmd.Stdout, cmd.Stderr = &promLog, &promLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	query := fmt.Sprintf("http://127.0.0.1:%d/api/v1/query?query=%s", port, urlQuery(`toolsift_tool_calls_total{server="traced",outcome="ok"}`))
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(query); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = string(b)
			if strings.Contains(last, `"value":[`) && strings.Contains(last, `,"1"]`) {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Errorf("Prometheus did not scrape toolsift's calls within 30s: %s\n%s", last, promLog.String())
}

func urlQuery(s string) string { return url.QueryEscape(s) }
