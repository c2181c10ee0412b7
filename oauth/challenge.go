// Package oauth signs toolsift in to the MCP servers that ask for OAuth, as a client of
// their authorization servers, per the MCP authorization specification (2025-11-25): it
// discovers the authorization server from the server's protected resource metadata,
// registers (a pre-registered client, a Client ID Metadata Document, or dynamic
// registration), runs the authorization code flow with PKCE through the user's browser,
// keeps the tokens (Store), and refreshes them for the server's connection (Source).
//
// Serving never starts a sign-in: a server that needs one says so, with the command to
// run (toolsift auth login NAME), and a sign-in made meanwhile is picked up.
package oauth

import (
	"net/http"
	"strings"
)

// Challenge is a Bearer challenge from a WWW-Authenticate header (RFC 6750, RFC 9728).
type Challenge struct {
	// ResourceMetadata is where the server's protected resource metadata is.
	ResourceMetadata string
	// Scope is what the request needed, space-separated.
	Scope string
	// Error is the error code, such as invalid_token or insufficient_scope.
	Error string
}

// ParseChallenge returns the Bearer challenge of a response's WWW-Authenticate headers, and
// whether there is one.
func ParseChallenge(h http.Header) (Challenge, bool) {
	for _, v := range h.Values("WWW-Authenticate") {
		if c, ok := parseBearer(v); ok {
			return c, true
		}
	}
	return Challenge{}, false
}

// parseBearer reads one header value, which may hold several challenges ("Basic
// realm=x, Bearer scope=y"). Only the Bearer one's parameters are kept.
func parseBearer(v string) (Challenge, bool) {
	var c Challenge
	found := false
	rest := strings.TrimSpace(v)
	for rest != "" {
		// A scheme is a token followed by a space (or the end); parameters are
		// name=value pairs separated by commas, values possibly quoted.
		scheme, after, _ := strings.Cut(rest, " ")
		if strings.Contains(scheme, "=") {
			return c, found // malformed: a parameter where a scheme should be
		}
		bearer := strings.EqualFold(strings.TrimSuffix(scheme, ","), "Bearer")
		rest = strings.TrimSpace(after)
		if strings.HasSuffix(scheme, ",") {
			found = found || bearer
			continue // a scheme with no parameters
		}
		for rest != "" {
			name, value, next, ok := param(rest)
			if !ok {
				break // the next challenge's scheme
			}
			if bearer {
				switch strings.ToLower(name) {
				case "resource_metadata":
					c.ResourceMetadata = value
				case "scope":
					c.Scope = value
				case "error":
					c.Error = value
				}
			}
			rest = next
		}
		if bearer {
			return c, true
		}
	}
	return c, found
}

// param reads name=value and the comma after it from s. It reports false when s starts
// with no name=value, as a new challenge's scheme does.
func param(s string) (name, value, rest string, ok bool) {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 || strings.ContainsAny(s[:eq], " \t,\"") {
		return "", "", s, false
	}
	name, s = strings.TrimSpace(s[:eq]), strings.TrimSpace(s[eq+1:])
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		i := 1
		for ; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 < len(s) {
					i++
					b.WriteByte(s[i])
				}
				continue
			case '"':
			default:
				b.WriteByte(s[i])
				continue
			}
			break
		}
		value, s = b.String(), s[min(i+1, len(s)):]
	} else {
		end := strings.IndexAny(s, ", ")
		if end < 0 {
			end = len(s)
		}
		value, s = s[:end], s[end:]
	}
	s = strings.TrimSpace(s)
	s = strings.TrimSpace(strings.TrimPrefix(s, ","))
	return name, value, s, true
}
