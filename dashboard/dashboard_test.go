package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/pin"
	"github.com/toolsift/toolsift/stats"
)

func TestQueryWords(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"create issue", []string{"create", "issue"}},
		{"Open a TICKET for the bug", []string{"open", "ticket", "bug"}},
		{"+github pull request", []string{"github", "pull", "request"}},
		{"server:jira select:a,b group:x file bug", []string{"file", "bug"}},
		{"bug bug BUG", []string{"bug"}},
		{"a i x", nil},
		{`"quoted", (parens)! <script>alert(1)</script>`, []string{"quoted", "parens", "script>alert(1)</script"}},
		{strings.Repeat("x", 41) + " ok", []string{"ok"}},
		{"one two three four five six seven eight nine ten", []string{"one", "two", "three", "four", "five", "six", "seven", "eight"}},
		{"新建 工单", []string{"新建", "工单"}},
	} {
		if got := queryWords(tc.query); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("queryWords(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
}

func TestLoopback(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("dashboard")) })
	l := NewLoopback(ok)
	serve := func(method, target, host string, mod func(*http.Request)) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, nil)
		r.Host = host
		if mod != nil {
			mod(r)
		}
		w := httptest.NewRecorder()
		l.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		name, method, target, host string
		want                       int
	}{
		{"no token", "GET", "/ui/", "127.0.0.1:9", http.StatusUnauthorized},
		{"wrong token", "GET", "/ui/?token=" + strings.Repeat("0", 64), "127.0.0.1:9", http.StatusUnauthorized},
		{"rebound host", "GET", l.Path(), "evil.example:9", http.StatusForbidden},
		{"no port", "GET", l.Path(), "127.0.0.1", http.StatusForbidden},
		{"favicon", "GET", "/favicon.ico", "127.0.0.1:9", http.StatusNoContent},
	} {
		if w := serve(tc.method, tc.target, tc.host, nil); w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
	}
	first := serve("GET", l.Path(), "127.0.0.2:9", nil)
	cookies := first.Result().Cookies()
	if first.Code != http.StatusSeeOther || len(cookies) != 1 || first.Header().Get("Location") != "/ui/" {
		t.Fatalf("the token: %d, %v, to %q", first.Code, cookies, first.Header().Get("Location"))
	}
	if again := serve("GET", l.Path(), "127.0.0.1:9", nil); again.Code != http.StatusUnauthorized {
		t.Errorf("the token again: %d, want 401", again.Code)
	}
	with := func(origin string) func(*http.Request) {
		return func(r *http.Request) {
			r.AddCookie(cookies[0])
			if origin != "" {
				r.Header.Set("Origin", origin)
			}
		}
	}
	if w := serve("GET", "/ui/", "127.0.0.1:9", with("")); w.Code != http.StatusOK || w.Body.String() != "dashboard" {
		t.Errorf("with the cookie: %d %q", w.Code, w.Body)
	}
	if w := serve("POST", "/ui/misses/fix", "127.0.0.1:9", with("http://127.0.0.1:9")); w.Code != http.StatusOK {
		t.Errorf("a post from the dashboard: %d", w.Code)
	}
	for _, origin := range []string{"http://127.0.0.1:3000", "null", "https://evil.example"} {
		if w := serve("POST", "/ui/misses/fix", "127.0.0.1:9", with(origin)); w.Code != http.StatusForbidden {
			t.Errorf("a post from %s: %d, want 403", origin, w.Code)
		}
	}
}

// The review page shows a server's hidden characters as escapes, settles only a version it
// shows, and, without Review (a team's service), offers the command instead of buttons.
func TestReview(t *testing.T) {
	store, err := stats.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	held := []Held{{Name: "s__t", Key: pin.Key{Server: "s", Tool: "t"}, Digest: "d1", Why: "its definition looks poisoned",
		Changes: []pin.Part{{Name: "description", Lines: []pin.Line{{Op: '+', Text: "Adds.\U000E0041\u202e<script>x</script>"}}}}}}
	var settled []string
	src := Source{Store: store, Servers: func(context.Context) []Server { return nil },
		Held: func(context.Context) []Held { return held },
		Review: func(_ context.Context, k pin.Key, digest string, approve bool) error {
			settled = append(settled, fmt.Sprintln(k, digest, approve))
			return nil
		}}
	serve := func(h http.Handler, method, target, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	page := serve(New(src), "GET", "/ui/review", "").Body.String()
	if strings.ContainsRune(page, 0xE0041) || strings.ContainsRune(page, 0x202E) || strings.Contains(page, "<script>") ||
		!strings.Contains(page, `\U000e0041\u202e&lt;script&gt;`) {
		t.Errorf("the page shows a server's text as is:\n%s", page)
	}
	for _, tc := range []struct {
		body string
		want int
	}{
		{"tool=s__t&digest=d0&verdict=approve", http.StatusConflict}, // a version not shown
		{"tool=s__u&digest=d1&verdict=approve", http.StatusConflict},
		{"tool=s__t&digest=d1&verdict=maybe", http.StatusConflict},
		{"tool=s__t&digest=d1&verdict=reject", http.StatusSeeOther},
	} {
		if w := serve(New(src), "POST", "/ui/review", tc.body); w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.body, w.Code, tc.want)
		}
	}
	if want := []string{"s/t d1 false\n"}; !reflect.DeepEqual(settled, want) {
		t.Errorf("settled %q, want %q", settled, want)
	}
	src.Review = nil
	if w := serve(New(src), "POST", "/ui/review", "tool=s__t&digest=d1&verdict=approve"); w.Code != http.StatusForbidden {
		t.Errorf("a team's dashboard approved: %d", w.Code)
	}
	if page := serve(New(src), "GET", "/ui/review", "").Body.String(); strings.Contains(page, `value="approve"`) || !strings.Contains(page, "toolsift review --approve s__t") {
		t.Errorf("a team's review page:\n%s", page)
	}
}
