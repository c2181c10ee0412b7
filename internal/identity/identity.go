// Package identity says who is calling toolsift's HTTP service: a person the team's identity
// provider signed in, or a machine holding a named token. The gate finds it and puts it in
// the request's context; the proxy binds it to the session the request opens.
package identity

import (
	"context"
	"crypto/sha256"
	"slices"
)

// Kind is how a caller proved who it is.
type Kind int

const (
	// Local is the one user of a toolsift that asks no one: over stdio, or over HTTP
	// without authentication (on loopback). Access rules do not apply to them.
	Local Kind = iota
	// Shared is a holder of a token of the config's auth.tokens, which names nobody: access
	// rules admit them nowhere.
	Shared
	// Person is a user signed in at the team's identity provider (a JWT access token).
	Person
	// Machine is the holder of a named token (toolsift token create).
	Machine
)

// String names the kind as logs do: local, config (a config token), person or token.
func (k Kind) String() string {
	switch k {
	case Shared:
		return "config"
	case Person:
		return "person"
	case Machine:
		return "token"
	}
	return "local"
}

// User is who a request comes from.
type User struct {
	Kind Kind
	// Name is how configs and logs name the user: the token's configured user claim for
	// a Person, the token's name for a Machine; empty for the others.
	Name string
	// Groups are a Person's groups, from the token's groups claim.
	Groups []string
	// Key identifies the user for good, across tokens and sign-ins: the issuer and subject
	// for a Person, the token's name for a Machine. Upstream sign-ins are kept under it.
	Key string
}

// Known reports whether the service knows who u is: a Person or a Machine.
func (u User) Known() bool { return u.Kind == Person || u.Kind == Machine }

// Admitted reports whether u is one of the users, groups or named tokens a rule names; the
// Local user is admitted everywhere, a Shared one nowhere.
func (u User) Admitted(users, groups, tokens []string) bool {
	switch u.Kind {
	case Local:
		return true
	case Person:
		return slices.Contains(users, u.Name) || slices.ContainsFunc(u.Groups, func(g string) bool { return slices.Contains(groups, g) })
	case Machine:
		return slices.Contains(tokens, u.Name)
	}
	return false
}

// Digest is a fixed-size key for u, for maps and logs where Key must not appear whole.
func (u User) Digest() [32]byte {
	return sha256.Sum256(append([]byte{byte(u.Kind), 0}, u.Key...))
}

type key struct{}

// NewContext returns ctx carrying u.
func NewContext(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, key{}, u)
}

// FromContext returns the user ctx carries; Local without one.
func FromContext(ctx context.Context) User {
	u, _ := ctx.Value(key{}).(User)
	return u
}
