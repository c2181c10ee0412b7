package config

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Search configures how tool_search ranks tools beyond its word ranker.
type Search struct {
	// Embeddings, when its URL is set, ranks by meaning as well as by words.
	Embeddings Embeddings
	// Sampling is SamplingOff (the default) or SamplingAuto.
	Sampling string
	// SavingsLine ends each tool_search result with one line of what toolsift saves
	// (savingsLine; on unless set to false).
	SavingsLine bool
}

// Values of Search.Sampling.
const (
	SamplingOff  = "off"
	SamplingAuto = "auto"
)

// Embeddings configures an OpenAI-compatible embeddings API: toolsift POSTs
// {"model", "input": [...]} to URL + "/embeddings". An empty URL means no embeddings.
type Embeddings struct {
	// URL is the API's base, such as https://api.openai.com/v1 or http://127.0.0.1:11434/v1.
	URL   string
	Model string
	// APIKey, if set, is sent as Authorization: Bearer.
	APIKey string
	// Timeout bounds the wait for a query's vector, after which a search ranks by words
	// alone; zero means DefaultEmbeddingsTimeout.
	Timeout time.Duration
}

// DefaultEmbeddingsTimeout is how long a search waits for its query's vector by default: a
// local model answers in tens of milliseconds and a hosted one in a few hundred, and a
// search must not stall on one that does neither.
const DefaultEmbeddingsTimeout = 500 * time.Millisecond

// DefaultListAllUnder is the budget of toolSearch: auto, in tokens: about 60 tools.
const DefaultListAllUnder = 5000

// toolSearch reads toolSearch: on, auto, or auto:N, and returns the list-all budget.
func (p *parser) toolSearch(n *yaml.Node, at string) int {
	v := p.str(n, at)
	switch v {
	case "on":
		return 0
	case "auto":
		return DefaultListAllUnder
	}
	if num, ok := strings.CutPrefix(v, "auto:"); ok {
		if budget, err := strconv.Atoi(num); err == nil && budget > 0 {
			return budget
		}
	}
	p.errorf(n, at, "%q: want on, auto, or auto:N (list every tool while all fit in N tokens)", v)
	return 0
}

// search reads the search mapping: embeddings, sampling and savingsLine.
func (p *parser) search(n *yaml.Node, at string) Search {
	s := Search{Sampling: SamplingOff, SavingsLine: true}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping with embeddings, sampling or savingsLine, got %s", kindName(n))
		return s
	}
	p.fields(n, at, func(key string, v *yaml.Node, at string) {
		switch key {
		case "embeddings":
			s.Embeddings = p.embeddings(v, at)
		case "sampling":
			switch mode := p.str(v, at); mode {
			case SamplingOff, SamplingAuto:
				s.Sampling = mode
			default:
				p.errorf(v, at, "%q: want auto or off", mode)
			}
		case "savingsLine":
			s.SavingsLine = p.bool(v, at)
		default:
			p.unknownKey(v, at, key, searchKeys)
		}
	})
	return s
}

// embeddings reads search.embeddings: url and model are required once it is written.
func (p *parser) embeddings(n *yaml.Node, at string) Embeddings {
	e := Embeddings{Timeout: DefaultEmbeddingsTimeout}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping with url and model, got %s", kindName(n))
		return e
	}
	var urlNode *yaml.Node
	p.fields(n, at, func(key string, v *yaml.Node, at string) {
		switch key {
		case "url":
			urlNode = v
			e.URL = strings.TrimRight(p.str(v, at), "/")
		case "model":
			e.Model = p.str(v, at)
		case "apiKey":
			e.APIKey = p.str(v, at)
		case "timeout":
			e.Timeout = p.duration(v, at)
		default:
			p.unknownKey(v, at, key, embeddingsKeys)
		}
	})
	switch u, err := url.Parse(e.URL); {
	case urlNode == nil && !p.guessed[at+".url"]:
		p.errorf(n, at+".url", "missing: the base URL of an OpenAI-compatible API, such as https://api.openai.com/v1 (toolsift POSTs to URL/embeddings)")
	case urlNode == nil:
	case e.URL == "":
		p.errorf(urlNode, at+".url", "empty: want the base URL of an OpenAI-compatible API, such as https://api.openai.com/v1")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		p.errorf(urlNode, at+".url", "%q is not an http(s) URL", e.URL)
	}
	if e.Model == "" && !p.guessed[at+".model"] {
		p.errorf(n, at+".model", "missing: the embedding model's name, such as text-embedding-3-small")
	}
	return e
}

// groups reads the groups mapping: a name to a list of tool-name patterns.
func (p *parser) groups(n *yaml.Node, at string) map[string][]string {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, at, "want a mapping of group names to lists of tool names, got %s", kindName(n))
		return nil
	}
	out := map[string][]string{}
	p.fields(n, at, func(name string, v *yaml.Node, at string) {
		if !validPrefix.MatchString(name) || name == "" {
			p.errorf(v, at, "a group name may use only letters, digits, _ and -")
		}
		out[name] = p.patterns(v, at)
	})
	return out
}
