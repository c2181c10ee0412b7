package config

import (
	"net/url"
	"strings"

	"gopkg.in/yaml.v3"
)

// What a team's shared service needs: who may sign in (auth.oidc), who may see which server
// or tool (access), and the record of who called what (audit).

// OIDC configures auth.oidc: the team's identity provider, whose access tokens the HTTP
// service accepts.
type OIDC struct {
	// Issuer is the authorization server's issuer URL.
	Issuer string
	// Audience is the aud tokens must carry; empty means the service's resource URL
	// (publicUrl and /mcp), as the MCP authorization spec has clients ask for.
	Audience string
	// UserClaim names the claim that names the user in access lists and audit lines;
	// empty means sub.
	UserClaim string
	// GroupsClaim names the claim that lists the user's groups; empty means none.
	GroupsClaim string
	// Scopes are the scopes clients should ask for.
	Scopes []string
	// Algorithms are the signing algorithms accepted; empty means RS256, PS256, ES256 and
	// EdDSA.
	Algorithms []string
	// ClientID and ClientSecret are toolsift's own client at the provider, with the
	// redirect URI publicUrl/oauth/callback: the sign-in pages use it to learn who opened a
	// sign-in link. Without it, people are not sent sign-in links.
	ClientID, ClientSecret string
}

// Access limits a server or a tool to some of a shared service's callers. What a caller
// may not use does not exist for them.
type Access struct {
	// Users are user names (the user claim of auth.oidc).
	Users []string
	// Groups are group names (the groups claim).
	Groups []string
	// Tokens are names of named tokens (toolsift token create).
	Tokens []string
}

// Audit configures the audit log: a JSON line per tool call.
type Audit struct {
	// File is where the lines go: a path, or "-" for stdout (over HTTP only); empty means
	// no audit log.
	File string
	// Arguments adds each call's arguments, secrets masked.
	Arguments bool
}

// Metrics configures the HTTP service's /metrics.
type Metrics struct {
	// Public serves /metrics without authentication.
	Public bool
}

// Tracing configures OpenTelemetry traces.
type Tracing struct {
	// OTLPEndpoint is the OTLP/HTTP collector's URL (http://collector:4318); empty means
	// no tracing.
	OTLPEndpoint string
}

// State configures the state the replicas of a service share.
type State struct {
	// RedisURL is the Redis (or Valkey) server's URL: redis://[user:password@]host:port/db,
	// or rediss:// for TLS. Empty means nothing is shared: one replica.
	RedisURL string
}

var (
	stateKeys   = []string{"redis"}
	redisKeys   = []string{"url"}
	metricsKeys = []string{"public"}
	tracingKeys = []string{"otlpEndpoint"}
	oidcKeys    = []string{"issuer", "audience", "userClaim", "groupsClaim", "scopes", "algorithms", "clientId", "clientSecret"}
	accessKeys  = []string{"users", "groups", "tokens"}
	auditKeys   = []string{"file", "arguments"}
)

func (p *parser) oidc(n *yaml.Node, at string) *OIDC {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping with issuer (and audience, userClaim, groupsClaim, scopes, algorithms), got %s", kindName(n))
		return nil
	}
	o := &OIDC{}
	p.fields(n, at, func(key string, v *yaml.Node, at string) {
		switch key {
		case "issuer":
			o.Issuer = p.str(v, at)
			if !secureURL(o.Issuer) {
				p.errorf(v, at, "%q is not an https URL (http only on this machine, for testing)", o.Issuer)
			}
		case "audience":
			o.Audience = p.str(v, at)
		case "userClaim":
			o.UserClaim = p.str(v, at)
		case "groupsClaim":
			o.GroupsClaim = p.str(v, at)
		case "scopes":
			o.Scopes = p.strList(v, at)
		case "clientId":
			o.ClientID = p.str(v, at)
		case "clientSecret":
			o.ClientSecret = p.str(v, at)
		case "algorithms":
			o.Algorithms = p.strList(v, at)
			for i, alg := range o.Algorithms {
				// An HMAC's key is the provider's secret, which toolsift does not have; and
				// with an asymmetric key as the HMAC key, anyone could sign.
				if strings.EqualFold(alg, "none") || strings.HasPrefix(strings.ToUpper(alg), "HS") {
					p.errorf(v.Content[i], at, "%q cannot be accepted: a token must be signed with the provider's private key (write RS256, ES256, PS256 or EdDSA)", alg)
				}
			}
		default:
			p.unknownKey(v, at, key, oidcKeys)
		}
	})
	if o.Issuer == "" {
		p.errorf(n, at+".issuer", "missing: the issuer URL of the team's identity provider")
	}
	return o
}

// secureURL reports whether raw is an https URL, or an http one on this machine.
func secureURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	h := u.Hostname()
	return u.Scheme == "https" || u.Scheme == "http" && (h == "localhost" || h == "127.0.0.1" || h == "::1")
}

func (p *parser) access(n *yaml.Node, at string) *Access {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping with users, groups or tokens, got %s", kindName(n))
		return nil
	}
	a := &Access{}
	p.fields(n, at, func(key string, v *yaml.Node, at string) {
		switch key {
		case "users":
			a.Users = p.strList(v, at)
		case "groups":
			a.Groups = p.strList(v, at)
		case "tokens":
			a.Tokens = p.strList(v, at)
		default:
			p.unknownKey(v, at, key, accessKeys)
		}
	})
	return a
}

func (p *parser) audit(n *yaml.Node, at string) Audit {
	var a Audit
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping with file and arguments, got %s", kindName(n))
		return a
	}
	p.fields(n, at, func(key string, v *yaml.Node, at string) {
		switch key {
		case "file":
			a.File = p.str(v, at)
		case "arguments":
			a.Arguments = p.bool(v, at)
		default:
			p.unknownKey(v, at, key, auditKeys)
		}
	})
	if a.File == "" {
		p.errorf(n, at+".file", "missing: a path for the audit lines, or - for stdout")
	}
	return a
}

// AccessOf returns the access rules of the server's tool: the tool's own, else the
// server's; nil when everyone may use it.
func (s *Server) AccessOf(tool string) *Access {
	if o, ok := s.Tools[tool]; ok && o.Access != nil {
		return o.Access
	}
	return s.Access
}

// block reads n, a mapping whose one key is keys[0], calling f with that key's value; what
// it knows of the block are those keys, for the message about another.
func (p *parser) block(n *yaml.Node, at string, keys []string, f func(v *yaml.Node, at string)) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping with %s, got %s", keys[0], kindName(n))
		return
	}
	p.fields(n, at, func(key string, v *yaml.Node, at string) {
		if key != keys[0] {
			p.unknownKey(v, at, key, keys)
			return
		}
		f(v, at)
	})
}

func (p *parser) metrics(n *yaml.Node, at string) Metrics {
	var m Metrics
	p.block(n, at, metricsKeys, func(v *yaml.Node, at string) { m.Public = p.bool(v, at) })
	return m
}

func (p *parser) tracing(n *yaml.Node, at string) Tracing {
	var t Tracing
	p.block(n, at, tracingKeys, func(v *yaml.Node, at string) {
		t.OTLPEndpoint = p.str(v, at)
		if u, err := url.Parse(t.OTLPEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.errorf(v, at, "%q is not an http(s) URL (write the collector's OTLP/HTTP address, such as http://collector:4318)", t.OTLPEndpoint)
		}
	})
	return t
}

func (p *parser) state(n *yaml.Node, at string) State {
	var st State
	p.block(n, at, stateKeys, func(v *yaml.Node, at string) {
		p.block(v, at, redisKeys, func(v *yaml.Node, at string) {
			st.RedisURL = p.str(v, at)
			if u, err := url.Parse(st.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
				p.errorf(v, at, "%q is not a Redis URL (write redis://host:6379/0, or rediss:// for TLS)", st.RedisURL)
			}
		})
	})
	return st
}
