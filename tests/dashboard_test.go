package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The secrets of the dashboard's servers: none may reach a page or an API answer.
const (
	uiURLSecret = "urlsecret0123456789abcdef"
	uiEnvSecret = "envsecret0123456789abcdef"
)

// dashboardConfig has two working servers, one whose URL carries a secret and cannot be
// reached, and one that prints its token as it fails: the dashboard shows both errors.
func dashboardConfig(t *testing.T) string {
	return config(t, fmt.Sprintf(`mcpServers:
  github:
    command: %q
    args: [--builtins=false, --catalog, %q]
  jira:
    command: %q
    args: [--builtins=false, --catalog, %q]
  broken:
    url: http://127.0.0.1:1/mcp?api_key=%s
  leaky:
    command: sh
    args: [-c, 'echo "Error: token $LEAKY_TOKEN refused" >&2; exit 1']
    env: {LEAKY_TOKEN: %s}
`, fixtureBin, catalog(t, "github"), fixtureBin, catalog(t, "jira"), uiURLSecret, uiEnvSecret))
}

// startUI runs toolsift ui --no-browser and returns the address it printed.
func startUI(t *testing.T, env []string, cfg string) string {
	t.Helper()
	cmd := exec.Command(bin, "ui", "--no-browser", "--config", cfg)
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			t.Logf("toolsift ui stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("toolsift ui printed nothing: %v\n%s", err, stderr.String())
	}
	u := regexp.MustCompile(`http://127\.0\.0\.1:\d+/ui/\?token=[0-9a-f]{64}`).FindString(line)
	if u == "" {
		t.Fatalf("toolsift ui printed %q, want the dashboard's address", line)
	}
	go io.Copy(io.Discard, out)
	return u
}

// uiBrowser is a browser that has visited the address toolsift ui printed, and so holds its
// cookie: the dashboard's base URL, the client, and a GET of a path that returns the body.
func uiBrowser(t *testing.T, addr string) (base string, browser *http.Client, get func(path string) string) {
	t.Helper()
	base = strings.SplitN(addr, "/ui/", 2)[0]
	jar, _ := cookiejar.New(nil)
	browser = &http.Client{Jar: jar}
	get = func(path string) string {
		t.Helper()
		resp, err := browser.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	get(strings.TrimPrefix(addr, base))
	return base, browser, get
}

// artifacts is where the dashboard's screenshots go: $TOOLSIFT_ARTIFACTS, else
// tests/artifacts.
func artifacts(t *testing.T) string {
	dir := os.Getenv("TOOLSIFT_ARTIFACTS")
	if dir == "" {
		dir = "artifacts"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The dashboard in a real headless Chromium: it loads with no console error, lists the
// servers, shows a search made meanwhile within 2 s, and its fix of a miss writes the
// keywords that make the next toolsift search find the tool.
func TestDashboard(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: run scripts/deps.sh")
	}
	env := isolatedEnv(t)
	cfg := dashboardConfig(t)
	addr := startUI(t, env, cfg)

	actx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var problems []string
	err = chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				problems = append(problems, fmt.Sprintf("console %s: %v", e.Type, e.Args))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
				problems = append(problems, fmt.Sprintf("%s: %s (%s)", e.Entry.Level, e.Entry.Text, e.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	var pages []string // every page and API answer, checked for secrets at the end
	page := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err == nil {
			err = os.WriteFile(filepath.Join(artifacts(t), name), png, 0o644)
		}
		if err != nil {
			t.Errorf("screenshot %s: %v", name, err)
		}
		html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
		if err != nil {
			t.Fatalf("page %s: %v", name, err)
		}
		pages = append(pages, html)
	}
	poll := func(expr string, timeout time.Duration) error {
		_, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(50*time.Millisecond)))
		return err
	}
	base := strings.SplitN(addr, "/ui/", 2)[0]
	do("overview", chromedp.Navigate(addr), chromedp.WaitVisible(chromedp.CSS("#servers")))
	if err := poll(`document.querySelector("#servers").innerText.includes("connected") && document.querySelector("#servers").innerText.includes("refused")`, 20*time.Second); err != nil {
		t.Fatalf("no server connected on the overview: %v", err)
	}
	servers := text("#servers")
	page("dashboard-start.png")
	for _, want := range []string{"github", "jira", "broken", "failed", "26", "Error: token [redacted] refused"} {
		if !strings.Contains(servers, want) {
			t.Errorf("the servers table lacks %q:\n%s", want, servers)
		}
	}

	// A session searches while the feed is open: a likely miss, then a call of a tool
	// that was not among its results.
	do("searches page", chromedp.Navigate(base+"/ui/searches"))
	if err := poll(`document.getElementById("live").innerText.includes("Updated live")`, 10*time.Second); err != nil {
		t.Fatalf("the feed is not live: %v", err)
	}
	c := startWith(t, env, bin, "--config", cfg)
	c.relist = true
	c.initialize()
	sr := c.search("frobnicate wibble", 5)
	searched := time.Now()
	err = poll(`document.querySelector("#feed").innerText.includes("frobnicate wibble")`, 2*time.Second)
	t.Logf("the search showed in the feed %v after it returned", time.Since(searched).Round(time.Millisecond))
	if err != nil {
		t.Errorf("the search did not show in the feed within 2s: %v", err)
	}
	const used = "jira__jira_post"
	if slices.Contains(matchNames(sr), used) {
		t.Fatalf("%s is already a result of the miss: %v", used, matchNames(sr))
	}
	c.call("call_tool", map[string]any{"name": used, "arguments": map[string]any{}})
	if err := poll(`document.querySelector("#feed").innerText.includes("then called `+used+`")`, 5*time.Second); err != nil {
		t.Errorf("the miss's outcome did not show in the feed: %v", err)
	}
	page("dashboard-searches.png")

	// The miss, fixed in one click.
	do("misses page", chromedp.Navigate(base+"/ui/misses"), chromedp.WaitVisible(chromedp.CSS("#misses form button")))
	page("dashboard-misses.png")
	do("the fix", chromedp.Click(chromedp.CSS("#misses form button")), chromedp.WaitVisible(chromedp.CSS(".notice")))
	if notice := text(".notice"); !strings.Contains(notice, "frobnicate, wibble") {
		t.Errorf("after the fix: %q", notice)
	}
	data, _ := os.ReadFile(cfg)
	if !strings.Contains(string(data), "keywords: [frobnicate, wibble]") {
		t.Errorf("the configuration after the fix:\n%s", data)
	}
	out, _, code := runCLIWith(t, env, "search", "--config", cfg, "-n", "1", "frobnicate wibble")
	if code != 0 || !strings.Contains(out, used) {
		t.Errorf("toolsift search after the fix (exit %d):\n%s", code, out)
	}

	// The overview after the session: its figures and its bar.
	c.stdin.Close()
	<-c.done
	do("overview after", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#servers")))
	if saved := text(".totals"); strings.Contains(saved, "over 0 model requests") || !strings.Contains(saved, "1 search,") {
		t.Errorf("the overview counts no request after the session:\n%s", saved)
	}
	page("dashboard-overview.png")
	for _, api := range []string{"/ui/api/servers", "/ui/api/report", "/ui/api/searches"} {
		do(api, chromedp.Navigate(base+api))
		pages = append(pages, text("body"))
	}
	for i, p := range pages {
		for _, secret := range []string{uiURLSecret, uiEnvSecret} {
			if strings.Contains(p, secret) {
				t.Errorf("page %d shows a server's secret:\n%s", i, p)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the browser reported:\n%s", strings.Join(problems, "\n"))
	}
}

// The loopback dashboard serves only whoever spent its one-time token, at its own host.
func TestDashboardLoopbackAuth(t *testing.T) {
	env := isolatedEnv(t)
	addr := startUI(t, env, dashboardConfig(t))
	u, _ := url.Parse(addr)
	base := "http://" + u.Host
	status := func(c *http.Client, req *http.Request) int {
		t.Helper()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	get := func(path string) *http.Request { r, _ := http.NewRequest("GET", base+path, nil); return r }
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/ui/", "/ui/api/report", "/ui/api/servers", "/ui/misses", "/ui/?token=" + strings.Repeat("0", 64)} {
		if code := status(plain, get(path)); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", path, code)
		}
	}
	fix, _ := http.NewRequest("POST", base+"/ui/misses/fix", strings.NewReader("search=x&words=y"))
	fix.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if code := status(plain, fix); code != http.StatusUnauthorized {
		t.Errorf("POST of a fix without the token: %d, want 401", code)
	}
	// A name rebound to 127.0.0.1 is refused even with the token.
	rebound := get(strings.TrimPrefix(addr, base))
	rebound.Host = "attacker.example:" + u.Port()
	if code := status(plain, rebound); code != http.StatusForbidden {
		t.Errorf("the token at another host name: %d, want 403", code)
	}
	first, err := plain.Do(get(strings.TrimPrefix(addr, base)))
	if err != nil {
		t.Fatal(err)
	}
	first.Body.Close()
	cookies := first.Cookies()
	if first.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != "/ui" {
		t.Fatalf("the printed address: %d, cookies %+v; want a redirect setting one HttpOnly, SameSite=Strict cookie for /ui", first.StatusCode, cookies)
	}
	if loc := first.Header.Get("Location"); strings.Contains(loc, "token") {
		t.Errorf("redirected to %q, with the token still in the address", loc)
	}
	jar, _ := cookiejar.New(nil)
	jar.SetCookies(&url.URL{Scheme: "http", Host: u.Host, Path: "/ui/"}, cookies)
	browser := &http.Client{Jar: jar}
	if code := status(browser, get("/ui/api/report")); code != http.StatusOK {
		t.Errorf("the API with the visit's cookie: %d", code)
	}
	if code := status(plain, get(strings.TrimPrefix(addr, base))); code != http.StatusUnauthorized {
		t.Errorf("the address a second time: %d, want 401 (good once)", code)
	}
	cross, _ := http.NewRequest("POST", base+"/ui/misses/fix", strings.NewReader("search=x&words=y"))
	cross.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	cross.Header.Set("Origin", "https://attacker.example")
	if code := status(browser, cross); code != http.StatusForbidden {
		t.Errorf("a cross-origin POST with the cookie: %d, want 403", code)
	}
}

// Over HTTP, /ui is behind the service's authentication: a bearer token, or the cookie of
// its sign-in form.
func TestDashboardHTTPAuth(t *testing.T) {
	// A server the token's access does not admit stays out of its dashboard.
	private := fmt.Sprintf("  private:\n    command: %q\n    args: [--builtins=false, --catalog, %q]\n    access: {users: [alice]}\n", fixtureBin, catalog(t, "slack"))
	base := serveHTTP(t, "auth:\n  tokens: [teamtoken0123456789abcdef]\n"+readFile(t, dashboardConfig(t))+private)
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(c *http.Client, method, path, token string, body io.Reader) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, body)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/ui/api/report", "/ui/api/servers", "/ui/api/searches"} {
		if code, _ := do(plain, "GET", path, "", nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s without auth: %d, want 401", path, code)
		}
		if code, _ := do(plain, "GET", path, "wrongtoken", nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d, want 401", path, code)
		}
	}
	if code, _ := do(plain, "GET", "/ui/", "", nil); code != http.StatusSeeOther {
		t.Errorf("GET /ui/ without auth: %d, want a redirect to the sign-in form", code)
	}
	if code, _ := do(plain, "POST", "/ui/login", "", strings.NewReader("token=wrongtoken")); code != http.StatusUnauthorized {
		t.Errorf("the sign-in form with a wrong token: %d, want 401", code)
	}
	var pages []string
	for _, path := range []string{"/ui/", "/ui/api/servers", "/ui/api/report"} {
		code, body := do(plain, "GET", path, "teamtoken0123456789abcdef", nil)
		if code != http.StatusOK {
			t.Errorf("GET %s with the token: %d", path, code)
		}
		pages = append(pages, body)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	if code, body := do(browser, "POST", "/ui/login", "", strings.NewReader("token=teamtoken0123456789abcdef")); code != http.StatusOK || !strings.Contains(body, "Servers") {
		t.Errorf("signed in through the form: %d", code)
	}
	// The cookie opens the dashboard, but is not the token: a browser sends it to every
	// port of the host, and it must not open /mcp.
	u, _ := url.Parse(base)
	for _, c := range jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: "/ui/"}) {
		if strings.Contains(c.Value, "teamtoken") {
			t.Errorf("the dashboard's cookie carries the token: %s=%s", c.Name, c.Value)
		}
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer "+c.Value)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := plain.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("the cookie's value as a bearer token on /mcp: %d, want 401", resp.StatusCode)
			}
		}
	}
	// The dashboard's own forms post with its origin; another origin is refused, a local
	// one on another port too (it is the same site, so the cookie goes with it).
	for origin, want := range map[string]int{base: http.StatusNotFound, "https://attacker.example": http.StatusForbidden, "http://127.0.0.1:3000": http.StatusForbidden} {
		req, _ := http.NewRequest("POST", base+"/ui/misses/fix", strings.NewReader("search=nope&words=x"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("a fix posted from %s: %d, want %d", origin, resp.StatusCode, want)
		}
	}
	for _, p := range pages[:2] {
		if !strings.Contains(p, "github") || strings.Contains(p, "private") {
			t.Errorf("a page lacks the servers, or shows one the token may not see:\n%s", p)
		}
	}
	for _, p := range pages {
		for _, secret := range []string{uiURLSecret, uiEnvSecret} {
			if strings.Contains(p, secret) {
				t.Errorf("a page shows a server's secret:\n%s", p)
			}
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A server that waits for a sign-in shows a Sign in button; the button signs in through
// the browser, and the server connects.
func TestDashboardSignIn(t *testing.T) {
	d := newAuthDouble(t).start()
	u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  atl:\n    url: %s/mcp\n", d.rs.URL))
	addr := startUI(t, u.env, u.cfg)
	base, browser, get := uiBrowser(t, addr)
	var page string
	eventually(t, 20*time.Second, "atl waiting for a sign-in", func() bool {
		page = get("/ui/")
		return strings.Contains(page, `name="server" value="atl"`)
	})
	form := url.Values{"server": {"atl"}}
	req, _ := http.NewRequest("POST", base+"/ui/signin", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "Signing in to atl") {
		t.Fatalf("after the button: %d\n%s", resp.StatusCode, b)
	}
	eventually(t, 30*time.Second, "atl connected after the sign-in", func() bool {
		return strings.Contains(get("/ui/api/servers"), `{"name":"atl","state":"connected"`)
	})
	if out, _, code := u.run("auth", "status"); code != 0 || !strings.HasPrefix(out, "atl  signed in with "+d.as.URL) {
		t.Errorf("auth status after the button = %d\n%s", code, out)
	}
	noSecretsIn(t, d, "the dashboard", get("/ui/"), get("/ui/api/servers"))
}

// The browser toolsift ui opens is given a page only its user can read, not the address:
// another local user can read a process's arguments.
func TestDashboardTokenNotInArguments(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "args")
	browser := filepath.Join(dir, "browser")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + record + ".tmp && cp \"$1\" " + record + ".page; mv " + record + ".tmp " + record + "\n"
	if err := os.WriteFile(browser, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(isolatedEnv(t), "BROWSER="+browser)
	cmd := exec.Command(bin, "ui", "--config", dashboardConfig(t))
	cmd.Env = env
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		}
	}
	defer stop()
	var args []byte
	eventually(t, 10*time.Second, "the browser started", func() bool {
		args, _ = os.ReadFile(record)
		return len(args) > 0
	})
	page, _ := os.ReadFile(record + ".page")
	token := regexp.MustCompile(`token=([0-9a-f]{64})`).FindSubmatch(page)
	if token == nil {
		t.Fatalf("the page the browser got does not lead to the dashboard:\n%s", page)
	}
	if strings.Contains(string(args), string(token[1])) {
		t.Errorf("the browser's arguments carry the token: %s", args)
	}
	path := strings.TrimSpace(string(args))
	if st, err := os.Stat(path); err != nil {
		t.Errorf("the page the browser got: %v", err)
	} else if st.Mode().Perm() != 0o600 {
		t.Errorf("the page %s: mode %v, want 0600", path, st.Mode().Perm())
	}
	stop() // out is written until toolsift ui has exited
	if strings.Contains(out.String(), string(token[1])) {
		t.Errorf("toolsift ui printed the token though it opened the browser:\n%s", out.String())
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("the page %s outlived toolsift ui", path)
	}
}
