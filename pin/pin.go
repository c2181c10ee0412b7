// Package pin keeps the tools a user trusts as they were when they trusted them. Each tool's
// definition (name, description, input and output schemas, annotations) is pinned the first
// time it is seen; a later change, or a definition that looks poisoned, holds the tool for
// the user's review, and only an approval pins the new version. What is pinned lives in a
// Store every toolsift process of the user (or every replica of a service) shares.
package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/toolsift/toolsift/poison"
)

// Mode is how a server's tools are pinned (a server's pin: in the configuration).
type Mode string

const (
	// Changes pins each tool on first sight and holds it when it changes.
	Changes Mode = "changes"
	// All holds a new tool too, until it is approved.
	All Mode = "all"
	// Off trusts whatever the server lists.
	Off Mode = "off"
)

// Key names a tool: its server's name in the configuration and its own name there.
type Key struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

func (k Key) String() string { return k.Server + "/" + k.Tool }

// Definition is what of a tool the model reads, and so what is pinned.
type Definition struct {
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// IsZero reports whether d holds nothing.
func (d Definition) IsZero() bool {
	return d.Title == "" && d.Description == "" && len(d.InputSchema) == 0 && len(d.OutputSchema) == 0 && len(d.Annotations) == 0
}

// Digest is the SHA-256 of a tool's name and definition, with each JSON value in a canonical
// form (keys sorted, no spaces), so that a server that sends the same tool with its keys in
// another order is not taken for one that changed it.
func Digest(name string, d Definition) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(name), []byte(d.Title), []byte(d.Description), canonical(d.InputSchema), canonical(d.OutputSchema), canonical(d.Annotations)} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// canonical re-encodes raw with sorted keys; what is not JSON is hashed as it is.
func canonical(raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// Version is one version of a tool's definition.
type Version struct {
	Digest string `json:"digest"`
	// Fingerprint is Seen.Fingerprint of the version when last seen.
	Fingerprint string     `json:"fingerprint,omitempty"`
	Definition  Definition `json:"definition,omitzero"` // kept apart by a Store: see Apart
	// At is when it was pinned (Entry.Pinned) or first seen (Entry.Pending).
	At time.Time `json:"at"`
	// Approved says the user approved it (toolsift review), rather than toolsift pinning it
	// on first sight.
	Approved bool `json:"approved,omitempty"`
	// Rules is the poison.Version the pinned version was found clean by: a version pinned
	// on first sight is checked again only when the rules change.
	Rules string `json:"rules,omitempty"`
	// Why says why a pending version is held.
	Why Why `json:"why,omitzero"`
	// Shown is when a review first showed this pending version: one approved by name alone
	// must have been shown, so that a version the server put in its place since is not.
	Shown time.Time `json:"shown,omitzero"`
}

// Why says why a tool is held.
type Why struct {
	Kind Kind `json:"kind"`
	// Since is when the version it replaces was pinned (KindChanged).
	Since time.Time `json:"since,omitzero"`
	// Findings are what looks poisoned in it, if anything.
	Findings []poison.Finding `json:"findings,omitempty"`
}

// Kind is the reason a tool is held.
type Kind string

const (
	KindChanged  Kind = "changed"  // its definition is not the one pinned
	KindNew      Kind = "new"      // pin: all, and never approved
	KindPoisoned Kind = "poisoned" // its definition looks poisoned
	KindRejected Kind = "rejected" // the user rejected this version
)

// String is the reason in one line, for the user or the model: it holds none of the tool's
// own text (a finding's field is a path of the server's schema, its excerpt the server's
// words), which toolsift review shows.
func (w Why) String() string {
	var s string
	switch w.Kind {
	case KindChanged:
		s = "its definition changed since it was pinned"
		if !w.Since.IsZero() {
			s += " on " + w.Since.UTC().Format(time.DateOnly)
		}
	case KindNew:
		s = "it is new, and its server's tools wait for review (pin: all)"
	case KindPoisoned:
		s = "its definition looks poisoned"
	case KindRejected:
		return "you rejected this version of it"
	}
	if len(w.Findings) > 0 {
		f := w.Findings[0]
		if w.Kind != KindPoisoned {
			s += ", and looks poisoned"
		}
		s += ": " + f.Why + " (" + f.Rule + ")"
		if n := len(w.Findings) - 1; n > 0 {
			s += fmt.Sprintf(" and %d more", n)
		}
	}
	return s
}

// Entry is what is kept of one tool.
type Entry struct {
	Key
	// Pinned is the version the user trusts; nil before one is.
	Pinned *Version `json:"pinned,omitempty"`
	// Pending is the latest version held for review, if any.
	Pending *Version `json:"pending,omitempty"`
	// Rejected are the digests of versions the user rejected, the latest last.
	Rejected []string `json:"rejected,omitempty"`
}

// maxRejected bounds Entry.Rejected: a server that keeps changing a rejected tool has its
// every version held anyway, as changed.
const maxRejected = 8

// Seen is a tool as a server lists it now.
type Seen struct {
	Key
	Mode Mode
	// Fingerprint is the SHA-256 of the tool as the server sent it, bytes and all: cheap,
	// and while it is the one pinned beside the digest, the digest need not be made.
	Fingerprint string
	// Digest makes the tool's Digest, and Definition its definition, which parse it.
	Digest     func() string
	Definition func() Definition
	// Check looks for poisoning in what the model would read (poison.Check); nil finds
	// nothing. It is called only when no pin says already: the rules take time.
	Check func() []poison.Finding
}

// decide says whether a tool as seen now is held, and how its entry changes: a tool seen
// for the first time is pinned, a version held is recorded as pending. It is the whole of
// the policy; e is the tool's entry (zero if none), rules the poison rules' version, and
// changed reports whether the returned entry differs.
func decide(e Entry, s Seen, now time.Time, rules string) (next Entry, held *Why, changed bool) {
	if s.Mode == Off {
		return e, nil, false
	}
	var digest string
	digestOf := func() string {
		if digest == "" && s.Digest != nil {
			digest = s.Digest()
		}
		return digest
	}
	check := func() []poison.Finding {
		if s.Check == nil {
			return nil
		}
		return s.Check()
	}
	definition := func() Definition {
		if s.Definition == nil {
			return Definition{}
		}
		return s.Definition()
	}
	samePinned := e.Pinned != nil && (s.Fingerprint != "" && e.Pinned.Fingerprint == s.Fingerprint || e.Pinned.Digest == digestOf())
	if !samePinned && slices.Contains(e.Rejected, digestOf()) {
		return e, &Why{Kind: KindRejected}, false
	}
	var why Why
	switch {
	case samePinned:
		var findings []poison.Finding
		if !e.Pinned.Approved && e.Pinned.Rules != rules {
			// Pinned on first sight by older rules: a version that they let through and
			// the current ones flag is not one the user chose, and waits for them too.
			if findings = check(); len(findings) > 0 {
				why = Why{Kind: KindPoisoned, Findings: findings}
				break
			}
		}
		rulesNow := e.Pinned.Approved || e.Pinned.Rules == rules
		if rulesNow && (s.Fingerprint == "" || e.Pinned.Fingerprint == s.Fingerprint) {
			return e, nil, false
		}
		v := *e.Pinned
		if !v.Approved {
			v.Rules = rules
		}
		if s.Fingerprint != "" {
			v.Fingerprint = s.Fingerprint
		}
		e.Pinned = &v
		return e, nil, true
	case e.Pinned != nil:
		why = Why{Kind: KindChanged, Since: e.Pinned.At, Findings: check()}
	default:
		if findings := check(); len(findings) > 0 {
			why = Why{Kind: KindPoisoned, Findings: findings}
		} else if s.Mode == All {
			why = Why{Kind: KindNew}
		} else {
			e.Key = s.Key
			e.Pinned = &Version{Digest: digestOf(), Fingerprint: s.Fingerprint, Definition: definition(), At: now, Rules: rules}
			return e, nil, true
		}
	}
	if e.Pending != nil && e.Pending.Digest == digestOf() {
		return e, &why, false
	}
	e.Key = s.Key
	e.Pending = &Version{Digest: digestOf(), Fingerprint: s.Fingerprint, Definition: definition(), At: now, Why: why}
	return e, &why, true
}

// merge applies a change this process decided on (mine) to the entry as stored now, which
// another process may have changed since: a first-sight pin is taken only if none was made
// meanwhile, and a pending version only if it is still to be reviewed: not the version
// pinned (unless newer rules flag that one), not one the user rejected.
func merge(stored, mine Entry) Entry {
	if stored.Pinned == nil && stored.Pending == nil && len(stored.Rejected) == 0 {
		return mine
	}
	switch {
	case stored.Pinned == nil && mine.Pinned != nil:
		stored.Key, stored.Pinned = mine.Key, mine.Pinned
	case stored.Pinned != nil && mine.Pinned != nil && stored.Pinned.Digest == mine.Pinned.Digest && stored.Pinned.Approved == mine.Pinned.Approved:
		// Checked again by this process's rules, or seen in other bytes.
		stored.Pinned = mine.Pinned
	}
	if p := mine.Pending; p != nil && !slices.Contains(stored.Rejected, p.Digest) &&
		(stored.Pending == nil || stored.Pending.Digest != p.Digest) && // a review may have shown it
		(stored.Pinned == nil || stored.Pinned.Digest != p.Digest || p.Why.Kind == KindPoisoned && !stored.Pinned.Approved) {
		stored.Key, stored.Pending = mine.Key, p
	}
	return stored
}

// same reports whether two entries decide alike: the same version pinned, and the same
// one pending.
func same(a, b Entry) bool {
	digest := func(v *Version) string {
		if v == nil {
			return ""
		}
		return v.Digest
	}
	return digest(a.Pinned) == digest(b.Pinned) && digest(a.Pending) == digest(b.Pending) && len(a.Rejected) == len(b.Rejected)
}

// Approve pins the pending version of e with the given digest: the one the user was shown.
func Approve(e *Entry, digest string, now time.Time) error {
	if e.Pending == nil || e.Pending.Digest != digest {
		return fmt.Errorf("%s has no version %s waiting for review: it changed again, review it anew", e.Key, short(digest))
	}
	v := *e.Pending
	v.At, v.Approved, v.Why, v.Shown = now, true, Why{}, time.Time{}
	e.Pinned, e.Pending = &v, nil
	e.Rejected = slices.DeleteFunc(e.Rejected, func(d string) bool { return d == digest })
	return nil
}

// Reject keeps the pending version of e with the given digest out for good.
func Reject(e *Entry, digest string) error {
	if e.Pending == nil || e.Pending.Digest != digest {
		return fmt.Errorf("%s has no version %s waiting for review: it changed again, review it anew", e.Key, short(digest))
	}
	e.Pending = nil
	e.Rejected = append(e.Rejected, digest)
	if n := len(e.Rejected) - maxRejected; n > 0 {
		e.Rejected = e.Rejected[n:]
	}
	return nil
}

func short(digest string) string { return digest[:min(len(digest), 12)] }
