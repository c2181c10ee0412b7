package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolsift/toolsift/internal/mcptest"
)

// redisServer starts a redis-server on a free loopback port, for as long as the test runs,
// and returns its URL, and functions that kill it and start it again on the same port
// (empty: no data is saved).
func redisServer(t testing.TB) (url string, stop, start func()) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not found: install Debian's redis-server package (scripts/deps.sh does)")
	}
	port := freePort(t)
	var cmd *exec.Cmd
	start = func() {
		cmd = exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "redis-server listening", func() bool {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	start()
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	t.Cleanup(stop)
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port), stop, start
}

// replica runs toolsift --listen on cfg and returns its base URL and its process; env is
// added to its environment.
func replica(t testing.TB, cfg string, env ...string) (string, *exec.Cmd, func() string) {
	t.Helper()
	cmd := exec.Command(bin, "--config", cfg, "--listen", "127.0.0.1:0", "--log-level", "debug")
	stderr := &mcptest.Buffer{}
	cmd.Stderr, cmd.Env = stderr, append(isolatedEnv(t), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("replica stderr:\n%s", stderr.String())
		}
	})
	var url string
	eventually(t, 20*time.Second, "the replica's address", func() bool {
		m := urlLog.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	return url, cmd, stderr.String
}

// rpc posts one JSON-RPC message to url's /mcp as session (empty for none), with token,
// and returns the status, the session the answer names, and the answer's result or error
// (from a JSON or an event-stream answer).
func rpc(t testing.TB, url, token, session, body string) (int, string, json.RawMessage) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer json.RawMessage
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			line = data
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 {
			answer = m.Result
			if m.Error != nil {
				answer = m.Error
			}
		}
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), answer
}

func listNames(t testing.TB, raw json.RawMessage) []string {
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	json.Unmarshal(raw, &res)
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// TestReplicasShareSessions (issue 35): replicas on one Redis serve each other's sessions.
// A session opened on one replica, with tools it unlocked there, is served by another as by
// the first (the same tools/list, an unlocked tool callable), and still after the first is
// killed with SIGKILL; its owner alone may use it on any replica; and a DELETE on any
// replica ends it on all.
func TestReplicasShareSessions(t *testing.T) {
	redisURL, _, _ := redisServer(t)
	const tok, other = "replica-token-0123456789", "replica-other-0123456789"
	cfg := config(t, fmt.Sprintf("auth: {tokens: [%q, %q]}\nstate: {redis: {url: %q}}\nmcpServers:%s", tok, other, redisURL, githubFixture(t, "")))
	a, aCmd, _ := replica(t, cfg)
	b, _, bLogs := replica(t, cfg)

	code, session, _ := rpc(t, a, tok, "", initBody)
	if code != 200 || session == "" {
		t.Fatalf("initialize on a: %d, session %q", code, session)
	}
	rpc(t, a, tok, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	search := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"create issue","max_results":2}}}`
	if code, _, res := rpc(t, a, tok, session, search); code != 200 || !strings.Contains(string(res), "github__create_issue") {
		t.Fatalf("search on a: %d %s", code, res)
	}
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	_, _, onA := rpc(t, a, tok, session, list)
	_, _, onB := rpc(t, b, tok, session, list)
	if names := listNames(t, onB); !slices.Equal(names, listNames(t, onA)) || !slices.Contains(names, "github__create_issue") {
		t.Fatalf("b lists %v for the session, a lists %v", names, listNames(t, onA))
	}
	call := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"github__create_issue","arguments":{"owner":"o","repo":"r","title":"t"}}}`
	if code, _, res := rpc(t, b, tok, session, call); code != 200 || strings.Contains(string(res), `"isError":true`) {
		t.Fatalf("calling the unlocked tool on b: %d %s", code, res)
	}
	if code, _, _ := rpc(t, b, other, session, list); code != http.StatusNotFound {
		t.Errorf("another token's holder used the session on b: %d, want 404", code)
	}

	// a dies; b carries on, and a replica started after knows the session too.
	aCmd.Process.Kill()
	aCmd.Wait()
	if _, _, res := rpc(t, b, tok, session, list); !slices.Equal(listNames(t, res), listNames(t, onA)) {
		t.Errorf("after a was killed, b lists %v", listNames(t, res))
	}
	c, _, _ := replica(t, cfg)
	if code, _, res := rpc(t, c, tok, session, call); code != 200 || strings.Contains(string(res), `"isError":true`) {
		t.Errorf("calling the unlocked tool on a replica started later: %d %s", code, res)
	}

	// A DELETE on c ends it everywhere.
	req, _ := http.NewRequest(http.MethodDelete, c+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Authorization", "Bearer "+tok)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("DELETE on c: %v %v", resp, err)
	}
	if code, _, _ := rpc(t, b, tok, session, list); code != http.StatusNotFound {
		t.Errorf("b serves the session after a DELETE on c: %d, want 404", code)
	}
	if !strings.Contains(bLogs(), "session restored from the shared state") {
		t.Errorf("b did not say it restored the session")
	}
}

// TestRedisDownAndBack (issue 35): while Redis is down a replica keeps serving the
// sessions it knows and says so in /readyz and status; once Redis is back (empty), a
// session either goes on with its own tools or answers 404, on which its client initializes
// again, never with a wrong list; and new sessions are shared again.
func TestRedisDownAndBack(t *testing.T) {
	redisURL, stop, start := redisServer(t)
	const tok = "replica-token-0123456789"
	cfg := config(t, fmt.Sprintf("auth: {tokens: [%q]}\nstate: {redis: {url: %q}}\nmcpServers:%s", tok, redisURL, githubFixture(t, "")))
	a, _, _ := replica(t, cfg)
	b, _, _ := replica(t, cfg)
	open := func(url string) string {
		code, session, _ := rpc(t, url, tok, "", initBody)
		if code != 200 || session == "" {
			t.Fatalf("initialize: %d", code)
		}
		rpc(t, url, tok, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		rpc(t, url, tok, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"create issue","max_results":2}}}`)
		return session
	}
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	session := open(b)
	_, _, before := rpc(t, b, tok, session, list)
	if !slices.Contains(listNames(t, before), "github__create_issue") {
		t.Fatalf("the session's list: %v", listNames(t, before))
	}

	stop()
	if code, _, res := rpc(t, b, tok, session, list); code != 200 || !slices.Equal(listNames(t, res), listNames(t, before)) {
		t.Errorf("with Redis down, b serves its session: %d %v", code, listNames(t, res))
	}
	resp, body := do(t, http.MethodGet, b+"/readyz", map[string]string{"Authorization": "Bearer " + tok}, "")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"sharedState":"unreachable`) {
		t.Errorf("/readyz with Redis down: %d %s", resp.StatusCode, body)
	}
	st := exec.Command(bin, "status", "--config", cfg, "--wait", "5s")
	st.Env = isolatedEnv(t)
	out, _ := st.CombinedOutput()
	if !strings.Contains(string(out), "shared state: redis://127.0.0.1") || !strings.Contains(string(out), "unreachable") {
		t.Errorf("status with Redis down:\n%s", out)
	}

	start()
	eventually(t, 10*time.Second, "/readyz saying the shared state is back", func() bool {
		_, body := do(t, http.MethodGet, b+"/readyz", nil, "")
		return strings.Contains(string(body), `"sharedState":"ok"`)
	})
	for _, url := range []string{a, b} {
		code, _, res := rpc(t, url, tok, session, list)
		if code == 200 && !slices.Equal(listNames(t, res), listNames(t, before)) {
			t.Errorf("after Redis came back empty, %s lists %v for the session, not its own %v", url, listNames(t, res), listNames(t, before))
		}
		if code != 200 && code != http.StatusNotFound {
			t.Errorf("after Redis came back empty, %s answers %d", url, code)
		}
	}
	fresh := open(a)
	if code, _, res := rpc(t, b, tok, fresh, list); code != 200 || !slices.Contains(listNames(t, res), "github__create_issue") {
		t.Errorf("a session opened on a after Redis came back, on b: %d %v", code, listNames(t, res))
	}
}

// TestReplicasBehindHAProxy (issue 35): three replicas on one Redis behind HAProxy run
// with deploy/haproxy.cfg as it is; 50 sessions of the official TypeScript client each
// unlock their own tools; one replica is killed with SIGKILL; every session then lists the
// same tools as before and calls one it unlocked (a request retried once at most, as a
// client does), and none lists another's.
func TestReplicasBehindHAProxy(t *testing.T) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal("haproxy not found: install Debian's haproxy package (scripts/deps.sh does)")
	}
	redisURL, _, _ := redisServer(t)
	const tok = "replica-token-0123456789"
	cfg := config(t, fmt.Sprintf("auth: {tokens: [%q]}\nstate: {redis: {url: %q}}\nmcpServers:%s", tok, redisURL, githubFixture(t, "")))
	var urls []string
	var procs []*exec.Cmd
	var logs []func() string
	for range 3 {
		u, p, l := replica(t, cfg)
		urls, procs, logs = append(urls, strings.TrimPrefix(u, "http://")), append(procs, p), append(logs, l)
	}
	front := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	haproxyFront(t, haproxy, front, urls)

	node := exec.Command("node", "tsreplicas.mjs", "http://"+front+"/mcp", tok, "50")
	stdin, _ := node.StdinPipe()
	stdout, _ := node.StdoutPipe()
	var nodeErr bytes.Buffer
	node.Stderr = &nodeErr
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Process.Kill(); node.Wait() })
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 16<<20)
	var ready struct{ Sessions [][]string }
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &ready) != nil || len(ready.Sessions) != 50 {
		t.Fatalf("the sessions did not open: %s\n%s", lines.Text(), nodeErr.String())
	}

	procs[1].Process.Kill()
	procs[1].Wait()
	fmt.Fprintln(stdin)
	var after struct {
		Sessions []struct {
			Before, After []string
			Called        bool
			Error         string
		}
	}
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &after) != nil {
		t.Fatalf("no results after the kill: %s\n%s", lines.Text(), nodeErr.String())
	}
	for i, s := range after.Sessions {
		switch {
		case s.Error != "":
			t.Errorf("session %d after the kill: %s", i, s.Error)
		case !slices.Equal(s.After, s.Before):
			t.Errorf("session %d lists %v after the kill, %v before", i, s.After, s.Before)
		case !s.Called:
			t.Errorf("session %d could not call the tool it unlocked", i)
		}
	}
	// The killed replica's sessions went on elsewhere, from the shared state.
	if restored := strings.Count(logs[0](), "session restored from the shared state") + strings.Count(logs[2](), "session restored from the shared state"); restored == 0 {
		t.Errorf("no session moved to another replica: was any on the one killed?")
	}
	// No session lists another's tools: each unlocked at most the two its search found.
	for i, list := range ready.Sessions {
		n := 0
		for _, name := range list {
			if strings.HasPrefix(name, "github__") {
				n++
			}
		}
		if n == 0 || n > 2 {
			t.Errorf("session %d lists %d tools unlocked, its search found at most 2: %v", i, n, list)
		}
	}
}

// haproxyFront runs deploy/haproxy.cfg as it is, at front, before the three replicas at
// urls (host:port), until the test ends.
func haproxyFront(t *testing.T, haproxy, front string, urls []string) {
	hap := exec.Command(haproxy, "-db", "-f", "../deploy/haproxy.cfg")
	hap.Env = append(isolatedEnv(t), "TOOLSIFT_FRONT="+front, "TOOLSIFT_1="+urls[0], "TOOLSIFT_2="+urls[1], "TOOLSIFT_3="+urls[2],
		"TOOLSIFT_HAPROXY_SOCKET="+t.TempDir()+"/haproxy.sock")
	var hapLog bytes.Buffer
	hap.Stdout, hap.Stderr = &hapLog, &hapLog
	if err := hap.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		hap.Process.Kill()
		hap.Wait()
		if t.Failed() {
			t.Logf("haproxy:\n%s", hapLog.String())
		}
	})
	eventually(t, 20*time.Second, "haproxy ready", func() bool {
		resp, err := http.Get("http://" + front + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
}

// TestTeamOnReplicas (issue 35): a team's service on three replicas behind HAProxy shares
// each person's sign-ins: a person signs in through whichever replicas the browser reaches,
// and every replica then acts as them; Redis holds no token in the clear; and a replica
// refuses to start without the key that seals them.
func TestTeamOnReplicas(t *testing.T) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal("haproxy not found: install Debian's haproxy package (scripts/deps.sh does)")
	}
	redisURL, _, _ := redisServer(t)
	d := newIDP(t)
	jira := newJiraDouble(t, d, false)
	front := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base := "http://" + front
	cfg := config(t, fmt.Sprintf("publicUrl: %s\nauth:\n  oidc:\n    issuer: %s\n    userClaim: email\n    clientId: toolsift\nstate: {redis: {url: %q}}\nmcpServers:\n  jira:\n    url: %s/mcp\n",
		base, d.issuer(), redisURL, jira.srv.URL))

	// Without the key, a replica says what to do and does not start.
	out, err := exec.Command(bin, "--config", cfg, "--listen", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "TOOLSIFT_STATE_KEY") || !strings.Contains(string(out), "openssl rand -base64 32") {
		t.Errorf("a replica without TOOLSIFT_STATE_KEY: %v\n%s", err, out)
	}

	key := "TOOLSIFT_STATE_KEY=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	var urls []string
	for range 3 {
		u, _, _ := replica(t, cfg, key, "TOOLSIFT_TOKEN_STORE=file")
		urls = append(urls, u)
	}
	hosts := make([]string, len(urls))
	for i, u := range urls {
		hosts[i] = strings.TrimPrefix(u, "http://")
	}
	haproxyFront(t, haproxy, front, hosts)

	tok := d.token("ann", base+"/mcp")
	ann := connectTeam(t, team{url: base}, tok, false)
	text, isErr := ann.whoami(t)
	link := linkPattern(base)(text)
	if !isErr || link == "" {
		t.Fatalf("ann's first call: %s", text)
	}
	if code, page := browse(t, link, "ann"); code != http.StatusOK {
		t.Fatalf("ann signing in through the replicas: %d %s", code, page)
	}
	// Every replica acts as ann now, with the one grant.
	code, session, _ := rpc(t, urls[0], tok, "", initBody)
	if code != 200 {
		t.Fatalf("initialize: %d", code)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"jira__whoami","arguments":{}}}`
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("the last answer: %s", last)
		}
	}()
	for i, u := range urls {
		eventually(t, 10*time.Second, fmt.Sprintf("replica %d acting as ann", i), func() bool {
			_, _, res := rpc(t, u, tok, session, call)
			last = string(res)
			return strings.Contains(string(res), "sub-ann") && !strings.Contains(string(res), `"isError":true`)
		})
	}

	// Redis holds the grants sealed: no token in the clear.
	opts, _ := redis.ParseURL(redisURL)
	rc := redis.NewClient(opts)
	defer rc.Close()
	ctx := context.Background()
	keys, _ := rc.Keys(ctx, "*").Result()
	var dump bytes.Buffer
	for _, k := range keys {
		switch rc.Type(ctx, k).Val() {
		case "string":
			dump.WriteString(rc.Get(ctx, k).Val())
		case "hash":
			for f, v := range rc.HGetAll(ctx, k).Val() {
				dump.WriteString(f + v)
			}
		}
	}
	if !slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "toolsift:grant:") }) {
		t.Errorf("no grant in Redis: %v", keys)
	}
	for _, secret := range append(d.issuedTokens(), tok) {
		if strings.Contains(dump.String(), secret) {
			t.Fatalf("a token is in Redis in the clear")
		}
	}
}
