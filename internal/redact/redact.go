// Package redact masks secrets in text that leaves toolsift: the logs, the results a model
// reads, the status a user prints. It is the one place that knows what a secret looks like.
//
// A Redactor masks three kinds of secrets:
//   - the values the configuration holds as secrets (env values, headers, API keys, URL
//     passwords and query values, bearer tokens), told to it with Add;
//   - URLs' user information and query values, wherever a URL appears in the text;
//   - well-known token shapes (GitHub, Slack, OpenAI, AWS), bearer credentials, and the
//     value after names such as api_key=, token: or password=.
//
// A masked secret becomes Mask. Names and hosts are kept: what failed must stay legible.
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
)

// Mask replaces each secret.
const Mask = "[redacted]"

// minSecret is the shortest configured value masked: shorter ones ("1", "true", "info")
// are settings rather than secrets, and masking them would garble every message.
const minSecret = 6

// Redactor masks secrets. Its methods may be called concurrently; the zero value masks
// only URLs and known shapes.
type Redactor struct {
	secrets atomic.Pointer[[]string] // longest first, so that no part of one is left
}

// New returns a Redactor that also masks the given values.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add makes r mask these values too, and their URL-escaped forms.
func (r *Redactor) Add(secrets ...string) {
	var list []string
	if old := r.secrets.Load(); old != nil {
		list = slices.Clone(*old)
	}
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) < minSecret {
			continue
		}
		list = append(list, s)
		for _, esc := range []string{url.QueryEscape(s), url.PathEscape(s)} {
			if esc != s {
				list = append(list, esc)
			}
		}
	}
	slices.SortFunc(list, func(a, b string) int { return len(b) - len(a) })
	list = slices.Compact(list)
	r.secrets.Store(&list)
}

var (
	// urlPattern finds URLs: a scheme, then anything up to a space, a quote or a bracket.
	urlPattern = regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>` + "`" + `]+`)
	// shapes are tokens recognisable by their form alone.
	shapes = regexp.MustCompile(`\b(?:` +
		`gh[oprsu]_[A-Za-z0-9]{16,}` + // GitHub
		`|github_pat_[A-Za-z0-9_]{16,}` +
		`|xox[abeoprs]-[A-Za-z0-9-]{8,}` + // Slack
		`|sk-[A-Za-z0-9_-]{16,}` + // OpenAI, Anthropic (sk-ant-…), and many others
		`|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}` + // Stripe
		`|AKIA[0-9A-Z]{16}` + // AWS access key ID
		`|glpat-[A-Za-z0-9_-]{16,}` + // GitLab
		`)`)
	// credential is an Authorization header's credential ("Bearer abc123…", "Basic …");
	// masked when it has a digit, so that prose ("basic authentication") is left alone.
	credential = regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]{8,})`)
	// named is a value after a name that says it is a secret: api_key=…, "token": "…",
	// password: …, in query strings, JSON, YAML and prose.
	// header is an Authorization header's credential, whatever its scheme.
	header = regexp.MustCompile(`(?i)(authorization["']?\s*[:=]\s*["']?(?:[A-Za-z]+\s+)?)([^\s"'&,;}\]]+)`)
	named  = regexp.MustCompile(`(?i)((?:api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|id[_-]?token|auth[_-]?token|client[_-]?secret|secret[_-]?key|private[_-]?key|secret|token|password|passwd|pwd)["']?\s*[:=]\s*["']?)([^\s"'&,;}\]]+)`)
)

// String returns s with every secret masked.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	if r != nil {
		if list := r.secrets.Load(); list != nil {
			for _, secret := range *list {
				s = strings.ReplaceAll(s, secret, Mask)
			}
		}
	}
	s = urlPattern.ReplaceAllStringFunc(s, URL)
	s = shapes.ReplaceAllString(s, Mask)
	s = credential.ReplaceAllStringFunc(s, func(m string) string {
		sub := credential.FindStringSubmatch(m)
		if !strings.ContainsAny(sub[3], "0123456789") {
			return m
		}
		return sub[1] + sub[2] + Mask
	})
	s = maskValues(header, s)
	s = maskNamed(s)
	return s
}

// maskNamed masks the value after each name that says it is a secret, but for a name of a
// variable in a ${NAME:-default} reference: a variable's name is no secret, and toolsift's
// own hints write one (a default that is a secret by its shape, or one of the configured
// values, is masked all the same).
func maskNamed(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range named.FindAllStringSubmatchIndex(s, -1) {
		value := s[m[4]:m[5]]
		if inReference(s, m[0]) || strings.HasPrefix(value, Mask[:len(Mask)-1]) {
			continue
		}
		b.WriteString(s[last:m[4]])
		b.WriteString(Mask)
		last = m[5]
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// inReference reports whether the name that starts at s[i:] ends a variable's name that
// opens a ${…} reference.
func inReference(s string, i int) bool {
	for i > 0 && (s[i-1] == '_' || s[i-1] >= 'A' && s[i-1] <= 'Z' || s[i-1] >= 'a' && s[i-1] <= 'z' || s[i-1] >= '0' && s[i-1] <= '9') {
		i--
	}
	return strings.HasSuffix(s[:i], "${")
}

// maskValues masks the second group of each match of re in s: the value after a name.
func maskValues(re *regexp.Regexp, s string) string {
	return re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		if strings.HasPrefix(sub[2], Mask[:len(Mask)-1]) { // masked already
			return m
		}
		return sub[1] + Mask
	})
}

// URL returns a URL with its user information and the values of its query masked; text
// that is not a URL comes back as it was.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		// Not parsed: mask what looks like user information and a query all the same.
		if at := strings.Index(raw, "@"); at > 0 {
			if scheme := strings.Index(raw, "://"); scheme >= 0 && scheme < at {
				raw = raw[:scheme+3] + Mask + raw[at:]
			}
		}
		if q := strings.IndexByte(raw, '?'); q >= 0 {
			raw = raw[:q+1] + Mask
		}
		return raw
	}
	if u.User != nil {
		u.User = url.User(Mask)
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			k, _, _ := strings.Cut(p, "=")
			parts[i] = k + "=" + Mask
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	if u.Fragment != "" {
		u.Fragment = Mask
	}
	// url.URL.String escapes the brackets of Mask in user information: write it as is.
	return strings.ReplaceAll(strings.ReplaceAll(u.String(), "%5Bredacted%5D", Mask), "%5bredacted%5d", Mask)
}

// Error returns err with its text masked; errors.Is and errors.As still see what it wraps.
// nil stays nil.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	var done *redacted
	if errors.As(err, &done) && done == err {
		return err
	}
	return &redacted{msg: r.String(err.Error()), err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
