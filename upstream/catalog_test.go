package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/pin"
)

func TestCatalogCollisions(t *testing.T) {
	cat := NewCatalog([]Tool{
		{Server: "a", Name: "x", Exposed: "x"},
		{Server: "b", Name: "x", Exposed: "x"},
	})
	if len(cat.Tools) != 2 || cat.Tools[0].Exposed != "x" || cat.Tools[1].Exposed == "x" {
		t.Fatalf("collision not resolved: %+v", cat.Tools)
	}
	if !apiName.MatchString(cat.Tools[1].Exposed) {
		t.Errorf("renamed tool %q is not a legal name", cat.Tools[1].Exposed)
	}
	if again := NewCatalog([]Tool{{Server: "a", Name: "x", Exposed: "x"}, {Server: "b", Name: "x", Exposed: "x"}}); again.Tools[1].Exposed != cat.Tools[1].Exposed {
		t.Error("collision renaming is not deterministic")
	}
}

// TestCollisionsFollowRelists: a server's re-list is merged with the other servers' parts as
// they stand, and the collision rule still holds: the earlier server in the configuration
// keeps a shared name, and the later one has it back once the earlier one drops it.
func TestCollisionsFollowRelists(t *testing.T) {
	a := &fakeConn{tools: []json.RawMessage{rawTool("x"), rawTool("y")}}
	b := &fakeConn{tools: []json.RawMessage{rawTool("x")}}
	var notifyA atomic.Value
	pool := NewPool([]config.Server{{Name: "a"}, {Name: "b"}}, Options{
		RelistInterval: time.Millisecond,
		Dial: func(_ context.Context, srv config.Server, _ *Tail, n Notify, _ Peer) (Conn, Info, error) {
			if srv.Name == "a" {
				notifyA.Store(n)
				return a, Info{}, nil
			}
			return b, Info{}, nil
		},
	})
	defer pool.Close()
	pool.Start(Hooks{})
	waitFor(t, "both servers", func() bool { return len(pool.Catalog().Tools) == 3 })
	owner := func() string {
		tool, _ := pool.Catalog().Lookup("x")
		return tool.Server
	}
	renamed := hashed("b/x")
	if got := owner(); got != "a" {
		t.Fatalf("x is %q's, want a's", got)
	}
	if tool, ok := pool.Catalog().Lookup(renamed); !ok || tool.Server != "b" || tool.Name != "x" {
		t.Fatalf("Lookup(%q) = %+v, %v, want b's x", renamed, tool, ok)
	}
	for i, list := range [][]json.RawMessage{{rawTool("y")}, {rawTool("x"), rawTool("y")}} {
		a.mu.Lock()
		a.tools = list
		a.mu.Unlock()
		notifyA.Load().(Notify)("notifications/tools/list_changed", nil)
		want := []string{"b", "a"}[i]
		waitFor(t, "x to be "+want+"'s", func() bool { return owner() == want })
		_, ok := pool.Catalog().Lookup(renamed)
		if ok != (want == "a") {
			t.Errorf("after a listed %d tools: Lookup(%q) found = %v", len(list), renamed, ok)
		}
		if n := len(pool.Catalog().Tools); n != len(list)+1 {
			t.Errorf("after a listed %d tools: %d in the catalog", len(list), n)
		}
	}
}

// TestBurstsShareBuilds: servers that connect together share catalog builds, and OnChange
// calls, rather than costing one each; every one of them is in the catalog once they have
// connected.
func TestBurstsShareBuilds(t *testing.T) {
	const n = 40
	var servers []config.Server
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		servers = append(servers, config.Server{Name: name, Prefix: name})
	}
	release := make(chan struct{})
	pool := NewPool(servers, Options{
		Dial: func(context.Context, config.Server, *Tail, Notify, Peer) (Conn, Info, error) {
			<-release
			return &fakeConn{tools: []json.RawMessage{rawTool("t"), rawTool("u")}}, Info{}, nil
		},
	})
	defer pool.Close()
	var changes atomic.Int32
	pool.Start(Hooks{OnChange: func() {
		changes.Add(1)
		time.Sleep(2 * time.Millisecond) // what a proxy makes of a change
	}})
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if pending := pool.WaitStarted(ctx); len(pending) > 0 {
		t.Fatalf("pending: %v", pending)
	}
	if got := len(pool.Catalog().Tools); got != 2*n {
		t.Errorf("%d tools once every server connected, want %d", got, 2*n)
	}
	if got := changes.Load(); got > n/4 {
		t.Errorf("%d catalog changes for %d servers connecting together, want at most %d", got, n, n/4)
	}
}

// TestLoneChangeIsNotHeldBack: a change after a quiet moment is built at once, however long
// the builds of a burst are spaced.
func TestLoneChangeIsNotHeldBack(t *testing.T) {
	conn := &fakeConn{tools: []json.RawMessage{rawTool("a")}}
	pool := NewPool([]config.Server{{Name: "s", Prefix: "s"}}, Options{
		Dial: func(context.Context, config.Server, *Tail, Notify, Peer) (Conn, Info, error) {
			return conn, Info{}, nil
		},
	})
	defer pool.Close()
	// A slow OnChange spaces the builds of a burst by maxBuildWait.
	pool.Start(Hooks{OnChange: func() { time.Sleep(maxBuildWait / buildPace) }})
	waitFor(t, "connection", func() bool { return len(pool.Catalog().Tools) == 1 })
	pool.rebuild() // now OnChange is known to be slow
	time.Sleep(maxBuildWait)
	start := time.Now()
	pool.rebuild()
	if took := time.Since(start) - maxBuildWait/buildPace; took > maxBuildWait/2 {
		t.Errorf("a lone change waited %v for its build", took)
	}
}

// TestNoPosingAsAnotherServer: a tool whose name starts with another server's prefix (from
// a server with an empty prefix, or one whose prefix holds "__") gets a name of its own,
// whichever server comes first; a server's own tools keep theirs.
func TestNoPosingAsAnotherServer(t *testing.T) {
	prefixes := map[string]string{"github": "github", "gh__x": "odd", "jira": "jira"}
	for _, tc := range []struct {
		name  string
		tools []Tool
		want  map[string]string // exposed name → its server
	}{
		{"an empty prefix, first", []Tool{{Server: "evil", Name: "github__create_issue", Exposed: "github__create_issue"}, {Server: "github", Name: "create_issue", Exposed: "github__create_issue"}},
			map[string]string{"github__create_issue": "github"}},
		{"an empty prefix, alone", []Tool{{Server: "evil", Name: "jira__delete", Exposed: "jira__delete"}},
			map[string]string{"jira__delete": ""}},
		{"a prefix holding __", []Tool{{Server: "evil", Name: "create_issue", Exposed: "github__evil__create_issue"}},
			map[string]string{"github__evil__create_issue": ""}},
		{"deeper in the name", []Tool{{Server: "evil", Name: "gh__x__y", Exposed: "gh__x__y"}},
			map[string]string{"gh__x__y": ""}},
		{"a server's own", []Tool{{Server: "odd", Name: "y", Exposed: "gh__x__y"}, {Server: "github", Name: "a__b", Exposed: "github__a__b"}},
			map[string]string{"gh__x__y": "odd", "github__a__b": "github"}},
		{"not a prefix", []Tool{{Server: "evil", Name: "githubby__x", Exposed: "githubby__x"}, {Server: "evil", Name: "github_x", Exposed: "github_x"}, {Server: "evil", Name: "__github", Exposed: "__github"}},
			map[string]string{"githubby__x": "evil", "github_x": "evil", "__github": "evil"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := merge([]part{{tools: tc.tools}}, prefixes, nil)
			for name, server := range tc.want {
				tool, ok := cat.Lookup(name)
				if server == "" && ok {
					t.Errorf("%s is %s's", name, tool.Server)
				}
				if server != "" && (!ok || tool.Server != server) {
					t.Errorf("%s: %+v, %v; want %s's", name, tool, ok, server)
				}
			}
			if len(cat.Tools) != len(tc.tools) {
				t.Errorf("%d tools of %d", len(cat.Tools), len(tc.tools))
			}
		})
	}
}

// TestHeldToolsLeaveTheCatalog: the tools a pin book holds are in Held with why, and in no
// lookup of Tools; the others are as they were.
func TestHeldToolsLeaveTheCatalog(t *testing.T) {
	book, err := pin.Open(context.Background(), pin.NewFile(filepath.Join(t.TempDir(), "pins.json")), nil)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name, desc string) Tool {
		return Tool{Server: "s", Name: name, Exposed: "s__" + name, Description: desc}
	}
	judge := func(t *Tool) *pin.Why {
		return book.Judge(pin.Seen{Key: pin.Key{Server: t.Server, Tool: t.Name}, Digest: t.Digest, Definition: t.Definition})
	}
	first := merge([]part{{tools: []Tool{mk("a", "A."), mk("b", "B."), mk("c", "C.")}}}, nil, judge)
	if len(first.Tools) != 3 || len(first.Held) != 0 {
		t.Fatalf("first sight: %d tools, %d held", len(first.Tools), len(first.Held))
	}
	second := merge([]part{{tools: []Tool{mk("a", "A."), mk("b", "B, changed."), mk("c", "C.")}}}, nil, judge)
	if _, ok := second.Lookup("s__b"); ok || len(second.Tools) != 2 {
		t.Fatalf("the changed tool is still listed: %d tools", len(second.Tools))
	}
	h, ok := second.HeldTool("s__b")
	if !ok || h.Why.Kind != pin.KindChanged || h.Description != "B, changed." {
		t.Fatalf("held: %+v %v", h, ok)
	}
	if a, ok := second.Lookup("s__a"); !ok || a.Name != "a" {
		t.Fatal("a is lost")
	}
	if c, ok := second.Lookup("s__c"); !ok || c.Name != "c" {
		t.Fatal("c is lost")
	}
}
