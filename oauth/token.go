package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolsift/toolsift/internal/terminal"
)

// Client is toolsift as a client of one authorization server.
type Client struct {
	ID, Secret string
	// AuthMethod is client_secret_basic, client_secret_post or none.
	AuthMethod string
}

// authMethod picks how a client with a secret authenticates at a token endpoint that lists
// these methods: basic, the default when none are listed (RFC 8414), unless only post is.
func authMethod(secret string, supported []string) string {
	switch {
	case secret == "":
		return "none"
	case len(supported) == 0 || slices.Contains(supported, "client_secret_basic"):
		return "client_secret_basic"
	case slices.Contains(supported, "client_secret_post"):
		return "client_secret_post"
	}
	return "client_secret_basic"
}

// tokenAnswer is a token endpoint's answer, success or error (RFC 6749 §5).
type tokenAnswer struct {
	AccessToken  string          `json:"access_token"`
	TokenType    string          `json:"token_type"`
	ExpiresIn    json.RawMessage `json:"expires_in"`
	RefreshToken string          `json:"refresh_token"`
	Scope        string          `json:"scope"`
	Error        string          `json:"error"`
}

// RefusedError is an authorization server's error answer to a token request.
type RefusedError struct {
	Code string // invalid_grant, invalid_client, …
}

func (e *RefusedError) Error() string {
	return "the authorization server refused: " + terminal.Escape(e.Code)
}

// tokenRequest posts a token request and returns the tokens in a copy of g. The server's
// own error text is not returned: it is not the user's to act on, and may echo what was sent.
func tokenRequest(ctx context.Context, hc *http.Client, endpoint string, c Client, form url.Values, g Grant, now time.Time) (*Grant, error) {
	if c.AuthMethod == "client_secret_post" {
		form.Set("client_secret", c.Secret)
	}
	if c.AuthMethod != "client_secret_basic" {
		form.Set("client_id", c.ID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if c.AuthMethod == "client_secret_basic" {
		// RFC 6749 §2.3.1: each part form-encoded before the base64.
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	var a tokenAnswer
	jsonErr := json.Unmarshal(data, &a)
	// GitHub answers errors with 200.
	if a.Error != "" {
		return nil, &RefusedError{Code: a.Error}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("token request: the authorization server answered %s", resp.Status)
	}
	if jsonErr != nil || a.AccessToken == "" {
		return nil, errors.New("token request: the answer holds no access token")
	}
	g.AccessToken, g.TokenType = a.AccessToken, a.TokenType
	if a.RefreshToken != "" {
		// A refresh token rotates: the old one is spent.
		g.RefreshToken = a.RefreshToken
	}
	if a.Scope != "" {
		g.Scope = a.Scope
	}
	g.Expiry, g.Lifetime = time.Time{}, 0
	if secs := expiresIn(a.ExpiresIn); secs > 0 {
		// Clamped before it is multiplied: a remote's number of seconds can overflow a
		// Duration into the past, and every request would then refresh.
		g.Lifetime = time.Duration(min(secs, int64(maxLifetime/time.Second))) * time.Second
		g.Expiry = now.Add(g.Lifetime)
	}
	g.Refused, g.Saved = "", now
	return &g, nil
}

// maxLifetime is the longest an access token is taken to last, whatever expires_in says:
// past it, the token is refreshed anyway (or, without a refresh token, used until refused).
const maxLifetime = 365 * 24 * time.Hour

// expiresIn reads expires_in, a number by the RFC and a string from some servers.
func expiresIn(raw json.RawMessage) int64 {
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0
		}
		n = json.Number(s)
	}
	v, err := n.Int64()
	if err != nil {
		f, err := n.Float64()
		if err != nil || f != f {
			return 0
		}
		// A float past int64's range converts to an unspecified value: clamp first.
		v = int64(min(max(f, 0), float64(maxLifetime/time.Second)))
	}
	return v
}

// refresh trades g's refresh token for new tokens, naming the resource again (RFC 8707:
// a refresh that drops it may get a token for another audience).
func refresh(ctx context.Context, hc *http.Client, g *Grant, c Client, now time.Time) (*Grant, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.RefreshToken}}
	if g.Resource != "" {
		form.Set("resource", g.Resource)
	}
	return tokenRequest(ctx, hc, g.TokenEndpoint, c, form, *g, now)
}

// revoke asks the authorization server to forget a token (RFC 7009), if it offers that.
func revoke(ctx context.Context, hc *http.Client, g *Grant, c Client, token, hint string) error {
	if g.RevocationEndpoint == "" || token == "" {
		return nil
	}
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	if c.AuthMethod == "client_secret_post" {
		form.Set("client_secret", c.Secret)
	}
	if c.AuthMethod != "client_secret_basic" {
		form.Set("client_id", c.ID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.RevocationEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c.AuthMethod == "client_secret_basic" {
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("revoking: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoking: the authorization server answered %s", resp.Status)
	}
	return nil
}
