package upstream

// Catalog is an immutable snapshot of every upstream tool, prompt and resource, in
// configuration order.
type Catalog struct {
	Tools     []Tool
	Prompts   []Prompt
	Resources []Resource
	byName    map[string]int
}

// NewCatalog makes a catalog of tools whose Exposed names are set, renaming any that collide.
func NewCatalog(tools []Tool) *Catalog {
	c := &Catalog{byName: make(map[string]int, len(tools))}
	for _, t := range tools {
		// Two servers with an empty prefix, or a hashed name meeting a real one, can
		// produce the same exposed name; the later tool gets a name of its own.
		if _, taken := c.byName[t.Exposed]; taken {
			t.Exposed = hashed(t.Server + "/" + t.Exposed)
		}
		c.byName[t.Exposed] = len(c.Tools)
		c.Tools = append(c.Tools, t)
	}
	return c
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

// rebuild replaces the catalog from the servers' current tools and reports the change. The
// servers call it, holding no lock, after their lists change.
func (p *Pool) rebuild() {
	p.rebuildMu.Lock()
	p.catalog.Store(p.buildCatalog())
	p.rebuildMu.Unlock()
	if p.onChange != nil {
		p.onChange()
	}
}

// buildCatalog makes a catalog of the servers' current tools, prompts and resources.
func (p *Pool) buildCatalog() *Catalog {
	var lists [][]Tool
	var prompts []Prompt
	var resources []Resource
	for _, s := range p.servers {
		s.mu.Lock()
		lists = append(lists, s.tools)
		for _, pr := range s.prompts {
			pr.Exposed = ExposedName(s.cfg.Prefix, pr.Name)
			prompts = append(prompts, pr)
		}
		resources = append(resources, s.resources...)
		s.mu.Unlock()
	}
	cat := NewCatalog(p.prefixed(lists))
	cat.Prompts, cat.Resources = prompts, resources
	return cat
}

// prefixed flattens per-server tool lists, setting exposed names.
func (p *Pool) prefixed(lists [][]Tool) []Tool {
	var all []Tool
	for i, tools := range lists {
		prefix := p.servers[i].cfg.Prefix
		for _, t := range tools {
			t.Exposed = ExposedName(prefix, t.Name)
			all = append(all, t)
		}
	}
	return all
}
