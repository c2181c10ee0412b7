package upstream

import (
	"strings"
	"time"

	"github.com/toolsift/toolsift/pin"
	"github.com/toolsift/toolsift/poison"
)

// Catalog is an immutable snapshot of every upstream tool, prompt and resource, in
// configuration order.
type Catalog struct {
	Tools     []Tool
	Prompts   []Prompt
	Resources []Resource
	// Held are the tools held for the user's review (see package pin): they are listed,
	// searched and called by nobody until approved.
	Held   []Held
	byName map[string]int
	held   map[string]int // Held by exposed name
}

// Held is a tool held for review, and why.
type Held struct {
	Tool
	Why pin.Why
}

// NewCatalog makes a catalog of tools whose Exposed names are set, renaming any that collide.
func NewCatalog(tools []Tool) *Catalog {
	return merge([]part{{tools: tools}}, nil, nil)
}

// part is one server's share of a catalog: its tools and prompts, their exposed names set,
// and its resources. A server makes a new part each time it lists (or reads the cache), and
// never changes one after, so that every catalog built while it stands shares it and no build
// computes a name again.
type part struct {
	tools     []Tool
	prompts   []Prompt
	resources []Resource
}

// merge makes a catalog of the parts, in order. Where two tools' exposed names collide (two
// servers with an empty prefix, or a hashed name meeting a real one), the later tool gets a
// name of its own; so does a tool whose name would pass for another server's, PREFIX__…
// where prefixes[PREFIX] is another server, whatever their order. judge, if set, says which
// tools are held for review. It costs a copy of the tools and a map of their names: what the
// servers parsed and named is reused as it is.
func merge(parts []part, prefixes map[string]string, judge func(*Tool) *pin.Why) *Catalog {
	var tools, prompts, resources int
	for _, pt := range parts {
		tools, prompts, resources = tools+len(pt.tools), prompts+len(pt.prompts), resources+len(pt.resources)
	}
	c := &Catalog{
		Tools:     make([]Tool, 0, tools),
		Prompts:   make([]Prompt, 0, prompts),
		Resources: make([]Resource, 0, resources),
		byName:    make(map[string]int, tools),
	}
	for _, pt := range parts {
		first := len(c.Tools)
		c.Tools = append(c.Tools, pt.tools...)
		for i := first; i < len(c.Tools); i++ {
			t := &c.Tools[i]
			if _, taken := c.byName[t.Exposed]; taken || posesAs(t, prefixes) {
				t.Exposed = hashed(t.Server + "/" + t.Exposed)
			}
			c.byName[t.Exposed] = i
		}
		c.Prompts = append(c.Prompts, pt.prompts...)
		c.Resources = append(c.Resources, pt.resources...)
	}
	if judge != nil {
		c.hold(judge)
	}
	return c
}

// posesAs reports whether t's exposed name starts with the prefix of a server not its own:
// a server with an empty prefix, or one whose prefix has "__" in it, could otherwise offer
// github__create_issue beside (or before) the github server's.
func posesAs(t *Tool, prefixes map[string]string) bool {
	name := t.Exposed
	for i := strings.Index(name, "__"); i > 0; {
		if owner, ok := prefixes[name[:i]]; ok && owner != t.Server {
			return true
		}
		next := strings.Index(name[i+2:], "__")
		if next < 0 {
			break
		}
		i += 2 + next
	}
	return false
}

// hold moves the tools judge holds from Tools to Held.
func (c *Catalog) hold(judge func(*Tool) *pin.Why) {
	kept := c.Tools[:0]
	for _, t := range c.Tools {
		if why := judge(&t); why != nil {
			c.Held = append(c.Held, Held{Tool: t, Why: *why})
			continue
		}
		kept = append(kept, t)
	}
	if len(c.Held) == 0 {
		return
	}
	c.Tools = kept
	c.byName = make(map[string]int, len(kept))
	for i, t := range kept {
		c.byName[t.Exposed] = i
	}
	c.held = make(map[string]int, len(c.Held))
	for i, h := range c.Held {
		c.held[h.Exposed] = i
	}
}

// HeldTool finds a tool held for review by exposed name.
func (c *Catalog) HeldTool(exposed string) (Held, bool) {
	i, ok := c.held[exposed]
	if !ok {
		return Held{}, false
	}
	return c.Held[i], true
}

// Lookup finds a tool by exposed name.
func (c *Catalog) Lookup(exposed string) (Tool, bool) {
	i, ok := c.byName[exposed]
	if !ok {
		return Tool{}, false
	}
	return c.Tools[i], true
}

// Catalog returns the current catalog. It is immutable; later changes make a new one.
func (p *Pool) Catalog() *Catalog { return p.catalog.Load() }

// Pacing of catalog builds in a stream of changes (see rebuild): a build that would follow
// the last one sooner than buildPace times what that build and the last OnChange took waits
// out the rest, but never more than maxBuildWait. Building, and whatever OnChange makes of each
// catalog, then take about a seventeenth of the time while servers keep coming up, however
// many there are and however fast they come; a change after a quiet moment is built at once.
const (
	buildPace    = 16
	maxBuildWait = 250 * time.Millisecond
)

// rebuild makes the catalog take in the servers' current lists, and returns once the stored
// catalog has them. A server calls it, holding no lock, after its lists change.
//
// Changes that come together share a build: while one is made, the servers that change wait
// for rebuildMu, and the first to take it builds for them all, after waiting out the pace
// (see buildPace); the others find their change in and return. OnChange is called once a
// build.
func (p *Pool) rebuild() {
	change := p.changes.Add(1)
	p.rebuildMu.Lock()
	if p.built >= change {
		// A build that began after this change took it in.
		p.rebuildMu.Unlock()
		return
	}
	if wait := time.Until(p.nextBuild); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.ctx.Done():
			t.Stop()
		}
	}
	// Every change counted by now had its part stored before it was counted.
	upTo := p.changes.Load()
	start := time.Now()
	cat := p.buildCatalog()
	p.catalog.Store(cat)
	built := time.Since(start)
	p.opts.Logger.Debug("catalog built", "tools", len(cat.Tools), "changes", upTo-p.built, "duration_ms", float64(built.Microseconds())/1e3)
	p.built = upTo
	p.nextBuild = time.Now().Add(min(buildPace*(built+time.Duration(p.onChangeCost.Load())), maxBuildWait))
	p.rebuildMu.Unlock()
	if p.onChange != nil {
		start := time.Now()
		p.onChange()
		p.onChangeCost.Store(int64(time.Since(start)))
	}
	p.flushPins()
}

// buildCatalog makes a catalog of the servers' current parts.
func (p *Pool) buildCatalog() *Catalog {
	parts := make([]part, len(p.servers))
	for i, s := range p.servers {
		s.mu.Lock()
		parts[i] = s.part
		s.mu.Unlock()
	}
	var judge func(*Tool) *pin.Why
	if p.opts.Pins != nil {
		judge = p.judge
	}
	return merge(parts, p.prefixes, judge)
}

// judge asks the pins whether t is held.
func (p *Pool) judge(t *Tool) *pin.Why {
	s := p.byName[t.Server]
	return p.opts.Pins.Judge(pin.Seen{
		Key:         pin.Key{Server: t.Server, Tool: t.Name},
		Mode:        pin.Mode(s.cfg.Pin),
		Fingerprint: t.Fingerprint,
		Digest:      t.Digest,
		Definition:  t.Definition,
		// The server's own text, which a pin vouches for: a description the configuration
		// replaces is the user's own.
		Check: func() []poison.Finding {
			def := t.Definition()
			found := poison.Check(def.Description, def.InputSchema, def.OutputSchema, def.Annotations)
			for _, f := range poison.Check(def.Title) {
				f.Field = "title"
				found = append(found, f)
			}
			return found
		},
	})
}
