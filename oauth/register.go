package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"

	"github.com/toolsift/toolsift/config"
)

// register chooses the client toolsift is to md's authorization server, in the MCP
// specification's order: the one the configuration names; a Client ID Metadata Document
// the user hosts, where the server takes those; one registered before with the same
// server and redirect URI; dynamic registration (RFC 7591). Else the error says what to
// register and where to put it. server names the server in messages.
func register(ctx context.Context, hc *http.Client, server, configFile string, md *Metadata, oc *config.OAuth, prev *Grant, redirectURI string) (Client, bool, error) {
	if oc != nil && oc.ClientID != "" {
		return Client{ID: oc.ClientID, Secret: oc.ClientSecret, AuthMethod: authMethod(oc.ClientSecret, md.TokenEndpointAuthMethodsSupported)}, false, nil
	}
	if oc != nil && oc.ClientMetadataURL != "" && md.ClientIDMetadataDocumentSupported {
		return Client{ID: oc.ClientMetadataURL, AuthMethod: "none"}, false, nil
	}
	if prev != nil && prev.Registered && prev.Issuer == md.Issuer && prev.RedirectURI == redirectURI && prev.ClientID != "" {
		return Client{ID: prev.ClientID, Secret: prev.ClientSecret, AuthMethod: prev.AuthMethod}, true, nil
	}
	if md.RegistrationEndpoint == "" {
		return Client{}, false, fmt.Errorf("%s's authorization server (%s) offers no dynamic registration: register an OAuth app with it, with the redirect URI %s, then put its client ID (and secret, if it has one) under mcpServers.%s.oauth in %s (clientId, clientSecret, redirectUri)",
			server, md.Issuer, redirectURI, server, configFile)
	}
	method := "none"
	if supported := md.TokenEndpointAuthMethodsSupported; len(supported) > 0 && !slices.Contains(supported, "none") {
		method = authMethod("secret", supported)
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":                "toolsift",
		"redirect_uris":              []string{redirectURI},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
		"application_type":           applicationType(redirectURI),
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, md.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return Client{}, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return Client{}, false, fmt.Errorf("registering with %s: %w", md.Issuer, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	var a struct {
		ClientID                string `json:"client_id"`
		ClientSecret            string `json:"client_secret"`
		TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
		Error                   string `json:"error"`
	}
	if json.Unmarshal(data, &a) != nil || resp.StatusCode < 200 || resp.StatusCode > 299 || a.ClientID == "" {
		code := a.Error
		if code == "" {
			code = resp.Status
		}
		return Client{}, false, fmt.Errorf("registering with %s (dynamic registration) failed: %q; register an OAuth app with it instead and put its client ID under mcpServers.%s.oauth in %s", md.Issuer, code, server, configFile)
	}
	c := Client{ID: a.ClientID, Secret: a.ClientSecret, AuthMethod: a.TokenEndpointAuthMethod}
	if c.AuthMethod == "" {
		c.AuthMethod = authMethod(c.Secret, md.TokenEndpointAuthMethodsSupported)
	}
	return c, true, nil
}

// applicationType is the registration's application_type (OpenID Dynamic Client
// Registration): native for a loopback redirect URI, web for a service's public one.
func applicationType(redirectURI string) string {
	if u, err := url.Parse(redirectURI); err == nil && u.Scheme == "https" {
		return "web"
	}
	return "native"
}
