package gate

import "testing"

func TestGateLimitsRequestsPerSession(t *testing.T) {
	g := &gate{opts: Options{MaxSessionRequests: 2}, inFlight: map[string]int{}}
	if first, second := g.enter("a"), g.enter("a"); !first || !second {
		t.Fatal("first two requests refused")
	}
	if g.enter("a") {
		t.Error("third request in flight admitted")
	}
	if !g.enter("b") {
		t.Error("another session's request refused")
	}
	g.leave("a")
	if !g.enter("a") {
		t.Error("request after one finished refused")
	}
	g.leave("a")
	g.leave("a")
	g.leave("b")
	if len(g.inFlight) != 0 {
		t.Errorf("inFlight not emptied: %v", g.inFlight)
	}
}

func TestGateOrigins(t *testing.T) {
	g := &gate{opts: Options{AllowedOrigins: []string{"https://app.example.com/"}}}
	for origin, want := range map[string]bool{
		"http://localhost:3000": true, "http://127.0.0.1": true, "http://[::1]:8080": true,
		"https://app.example.com": true, "https://APP.example.com": true,
		"https://evil.example": false, "http://localhost.evil.example": false, "null": false, "::": false,
	} {
		if got := g.originAllowed(origin); got != want {
			t.Errorf("originAllowed(%q) = %v, want %v", origin, got, want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.8.9.10": true, "::1": true,
		"0.0.0.0": false, "::": false, "": false, "[::1]": false, "127.0.0.1:8080": false,
		"localhost.evil.example": false, "evil.localhost": false, "192.168.1.1": false, "example.com": false,
	} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}
