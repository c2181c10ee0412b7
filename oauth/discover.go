package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// AuthServer is an authorization server's metadata (RFC 8414, OpenID Connect Discovery).
type AuthServer struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	RegistrationEndpoint                       string   `json:"registration_endpoint"`
	RevocationEndpoint                         string   `json:"revocation_endpoint"`
	ScopesSupported                            []string `json:"scopes_supported"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
}

// Metadata is what discovery learnt of a server: the resource to name in token requests, the
// scopes it lists, and its authorization server.
type Metadata struct {
	Resource        string
	ScopesSupported []string
	AuthServer
}

// resourceMetadata is a protected resource's metadata (RFC 9728).
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// maxMetadataBytes bounds a metadata document: they are a few kilobytes.
const maxMetadataBytes = 1 << 20

// Discover finds the authorization server of the MCP server at serverURL, in the order the
// MCP specification gives: the protected resource metadata named by the challenge, else at
// the path-specific then the root well-known URL (else, as servers of the 2025-03-26
// revision do, the server's own origin stands for its authorization server); then that
// server's metadata, OAuth's then OpenID Connect's. It refuses metadata whose issuer is not
// the authorization server asked for, a resource that is not the server, and an
// authorization server that does not offer PKCE with S256.
func Discover(ctx context.Context, hc *http.Client, serverURL string, ch Challenge) (*Metadata, error) {
	server, err := url.Parse(serverURL)
	if err != nil || server.Host == "" {
		return nil, fmt.Errorf("%q is not a server URL", serverURL)
	}
	md := &Metadata{Resource: canonical(server)}
	var prm *resourceMetadata
	for _, u := range prmURLs(server, ch.ResourceMetadata) {
		if prm, err = fetchJSON[resourceMetadata](ctx, hc, u); err != nil {
			return nil, err
		}
		if prm != nil {
			break
		}
	}
	issuer := server.Scheme + "://" + server.Host
	if prm != nil {
		if len(prm.AuthorizationServers) == 0 {
			return nil, errors.New("the server's protected resource metadata names no authorization server")
		}
		issuer = prm.AuthorizationServers[0]
		if err := webURL(issuer); err != nil {
			return nil, fmt.Errorf("the server's protected resource metadata names the authorization server %q: %w; toolsift does not sign in to it", issuer, err)
		}
		md.ScopesSupported = prm.ScopesSupported
		if prm.Resource != "" {
			if !covers(prm.Resource, server) {
				return nil, fmt.Errorf("the server's protected resource metadata is for %s, not %s: refused", prm.Resource, serverURL)
			}
			md.Resource = prm.Resource
		}
	}
	as, err := fetchAuthServer(ctx, hc, issuer, prm == nil)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(as.CodeChallengeMethodsSupported, "S256") {
		return nil, fmt.Errorf("the authorization server %q does not offer PKCE with S256 (code_challenge_methods_supported), which the MCP specification requires: toolsift does not sign in to it", issuer)
	}
	if as.AuthorizationEndpoint == "" || as.TokenEndpoint == "" {
		return nil, fmt.Errorf("the authorization server %q names no authorization or token endpoint", issuer)
	}
	for _, e := range []struct{ field, value string }{
		{"issuer", as.Issuer},
		{"authorization_endpoint", as.AuthorizationEndpoint},
		{"token_endpoint", as.TokenEndpoint},
		{"registration_endpoint", as.RegistrationEndpoint},
		{"revocation_endpoint", as.RevocationEndpoint},
	} {
		if e.value == "" && e.field != "authorization_endpoint" && e.field != "token_endpoint" {
			continue
		}
		if err := webURL(e.value); err != nil {
			return nil, fmt.Errorf("the authorization server %q gives %s %q: %w; toolsift does not sign in to it", issuer, e.field, e.value, err)
		}
	}
	md.AuthServer = *as
	return md, nil
}

// webURL checks a URL a remote gave toolsift to open in a browser or to send a secret to:
// https, or http to this machine only. Anything else — file:, smb:, a custom scheme an OS
// opener hands to some program, plain http across the network — is refused before any use.
func webURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return errors.New("not an https URL")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return errors.New("plain http to another machine; only https is allowed")
	}
	return errors.New("not an https URL")
}

// isLoopback reports whether host names this machine only.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// prmURLs are where a server's protected resource metadata may be, in the order to try.
func prmURLs(server *url.URL, fromChallenge string) []string {
	if fromChallenge != "" {
		// Only the server's own origin may say where its metadata is: a challenge pointing
		// elsewhere could send toolsift to an attacker's authorization server.
		if u, err := url.Parse(fromChallenge); err == nil && u.Scheme == server.Scheme && strings.EqualFold(u.Host, server.Host) {
			return []string{fromChallenge}
		}
	}
	origin := server.Scheme + "://" + server.Host
	var out []string
	if p := strings.TrimSuffix(server.EscapedPath(), "/"); p != "" {
		out = append(out, origin+"/.well-known/oauth-protected-resource"+p)
	}
	return append(out, origin+"/.well-known/oauth-protected-resource")
}

// fetchAuthServer reads the metadata of the authorization server issuer, at the URLs the
// MCP specification lists in its order, and checks that it is issuer's. legacy is set when
// issuer is only the server's origin, standing in for the protected resource metadata a
// 2025-03-26 server does not have: the metadata there then names its issuer, which must be
// of that origin.
func fetchAuthServer(ctx context.Context, hc *http.Client, issuer string, legacy bool) (*AuthServer, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("authorization server %q is not an http(s) URL", issuer)
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	candidates := []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	if path != "" {
		candidates = []string{
			origin + "/.well-known/oauth-authorization-server" + path,
			origin + "/.well-known/openid-configuration" + path,
			origin + path + "/.well-known/openid-configuration",
		}
	}
	for _, c := range candidates {
		as, err := fetchJSON[AuthServer](ctx, hc, c)
		if err != nil {
			return nil, err
		}
		if as == nil {
			continue
		}
		if legacy {
			if iu, err := url.Parse(as.Issuer); err != nil || iu.Scheme+"://"+iu.Host != origin {
				return nil, fmt.Errorf("the metadata at %s is for the issuer %q, not one of %s: refused (RFC 8414 §3.3)", c, as.Issuer, origin)
			}
			return as, nil
		}
		if strings.TrimSuffix(as.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return nil, fmt.Errorf("the metadata at %s is for the issuer %q, not %q: refused (RFC 8414 §3.3)", c, as.Issuer, issuer)
		}
		return as, nil
	}
	return nil, fmt.Errorf("no authorization server metadata for %s (looked at %s)", issuer, strings.Join(candidates, ", "))
}

// fetchJSON GETs a metadata document; nil, nil when there is none there (an error status).
func fetchJSON[T any](ctx context.Context, hc *http.Client, u string) (*T, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadataBytes))
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", u, err)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s is not a metadata document: %w", u, err)
	}
	return &v, nil
}

// canonical is a server's URL as a resource indicator (RFC 8707): no fragment, and no
// trailing slash (the MCP specification's canonical form).
func canonical(u *url.URL) string {
	c := *u
	c.Fragment, c.RawFragment = "", ""
	c.Scheme, c.Host = strings.ToLower(c.Scheme), strings.ToLower(c.Host)
	s := c.String()
	if c.RawQuery == "" {
		s = strings.TrimSuffix(s, "/")
	}
	return s
}

// covers reports whether the resource identifier names the server: the same origin, and a
// path that is the server's or leads to it.
func covers(resource string, server *url.URL) bool {
	r, err := url.Parse(resource)
	if err != nil || !strings.EqualFold(r.Scheme, server.Scheme) || !strings.EqualFold(r.Host, server.Host) {
		return false
	}
	rp, sp := strings.TrimSuffix(r.Path, "/"), strings.TrimSuffix(server.Path, "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}
