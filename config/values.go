package config

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The parser's readers of values: strings (with ${VAR} expanded), lists, mappings,
// durations and numbers, each reporting what is wrong with the key path of the value.

func (p *parser) str(n *yaml.Node, at string) string {
	// Numbers and booleans are read as their text: YAML users write `PORT: 8080`.
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, at, "want a string, got %s", kindName(n))
		return ""
	}
	return p.expand(n, at, n.Value)
}

func (p *parser) toolOverrides(n *yaml.Node, at string) map[string]ToolOverride {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping of tool names to {keywords, description, alwaysLoad}, got %s", kindName(n))
		return nil
	}
	out := map[string]ToolOverride{}
	p.fields(n, at, func(tool string, v *yaml.Node, at string) {
		var o ToolOverride
		if v.Kind != yaml.MappingNode {
			p.errorf(v, at, "want a mapping with keywords, description or alwaysLoad, got %s", kindName(v))
			return
		}
		p.fields(v, at, func(key string, v *yaml.Node, at string) {
			switch key {
			case "keywords":
				o.Keywords = p.strList(v, at)
			case "description":
				o.Description = p.str(v, at)
			case "alwaysLoad":
				b := p.bool(v, at)
				o.AlwaysLoad = &b
			case "access":
				o.Access = p.access(v, at)
			default:
				p.unknownKey(v, at, key, toolKeys)
			}
		})
		out[tool] = o
	})
	return out
}

func (p *parser) duration(n *yaml.Node, at string) time.Duration {
	s := p.str(n, at)
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		p.errorf(n, at, "%q is not a positive duration (write 30s, 10m, 1h)", s)
		return 0
	}
	return d
}

func (p *parser) positive(n *yaml.Node, at string) int {
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil || v < 1 {
		p.errorf(n, at, "%q is not a positive whole number", n.Value)
		return 0
	}
	return v
}

func (p *parser) bool(n *yaml.Node, at string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		p.errorf(n, at, "want true or false, got %s", kindName(n))
		return false
	}
	var b bool
	_ = n.Decode(&b)
	return b
}

func (p *parser) strList(n *yaml.Node, at string) []string {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, at, "want a list of strings, got %s", kindName(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		out = append(out, p.str(item, fmt.Sprintf("%s[%d]", at, i)))
	}
	return out
}

// patterns reads a list of tool-name globs, rejecting malformed ones.
func (p *parser) patterns(n *yaml.Node, at string) []string {
	list := p.strList(n, at)
	for i, pat := range list {
		if _, err := path.Match(pat, ""); err != nil {
			p.errorf(n.Content[i], fmt.Sprintf("%s[%d]", at, i), "%q is not a valid pattern: %v", pat, err)
		}
	}
	return list
}

func (p *parser) strMap(n *yaml.Node, at string) map[string]string {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping of names to strings, got %s", kindName(n))
		return nil
	}
	out := map[string]string{}
	p.fields(n, at, func(key string, v *yaml.Node, at string) {
		out[key] = p.str(v, at)
	})
	return out
}

// envRef matches ${VAR}, ${VAR:-default}, and $${, which stands for a literal ${.
var envRef = regexp.MustCompile(`\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expand replaces ${VAR} and ${VAR:-default} in s, and $${ with ${.
func (p *parser) expand(n *yaml.Node, at, s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return envRef.ReplaceAllStringFunc(s, func(ref string) string {
		if ref == "$${" {
			return "${"
		}
		m := envRef.FindStringSubmatch(ref)
		if v, ok := p.getenv(m[1]); ok && (v != "" || m[2] == "") {
			return v
		}
		if m[2] != "" {
			return m[3]
		}
		if p.current == "" {
			p.errorf(n, at, "${%s} is not set (export it where toolsift is started, or write ${%s:-default})", m[1], m[1])
			return ""
		}
		if p.unset == nil {
			p.unset = map[string][]string{}
		}
		// Said without "key: value", which would read as a secret to redact when the key is
		// a header such as Authorization.
		p.unset[p.current] = append(p.unset[p.current], (&Error{File: p.file, Line: n.Line,
			Msg: fmt.Sprintf("${%s} is not set (used in %s; export it where toolsift is started, or write ${%s:-default})", m[1], at, m[1])}).Error())
		return ""
	})
}

func kindName(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!null":
		return "null"
	case "!!bool":
		return "a boolean"
	case "!!int", "!!float":
		return "a number"
	}
	return "a string"
}

// oauth reads a server's oauth block.
func (p *parser) oauth(n *yaml.Node, at string) *OAuth {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping with clientId, clientSecret, scopes, redirectUri or clientMetadataUrl, got %s", kindName(n))
		return nil
	}
	o := &OAuth{}
	var secretNode *yaml.Node
	p.fields(n, at, func(key string, v *yaml.Node, at string) {
		switch key {
		case "clientId":
			o.ClientID = p.str(v, at)
		case "clientSecret":
			secretNode = v
			o.ClientSecret = p.str(v, at)
		case "scopes":
			o.Scopes = p.strList(v, at)
		case "redirectUri":
			o.RedirectURI = p.str(v, at)
			if u, err := url.Parse(o.RedirectURI); err != nil || u.Scheme != "http" || u.Port() == "" ||
				(u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost" && u.Hostname() != "::1") {
				p.errorf(v, at, "%q is not a loopback address with a port (write http://127.0.0.1:PORT/callback, as registered with the app)", o.RedirectURI)
			}
		case "clientMetadataUrl":
			o.ClientMetadataURL = p.str(v, at)
			if u, err := url.Parse(o.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
				p.errorf(v, at, "%q is not an https URL with a path (a Client ID Metadata Document is served over https)", o.ClientMetadataURL)
			}
		default:
			p.unknownKey(v, at, key, oauthKeys)
		}
	})
	if o.ClientSecret != "" && o.ClientID == "" && secretNode != nil {
		p.errorf(secretNode, at+".clientSecret", "a secret needs its clientId")
	}
	return o
}
