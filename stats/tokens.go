package stats

import (
	"crypto/sha256"
	"strconv"
	"sync"

	"github.com/tiktoken-go/tokenizer"
	"github.com/tiktoken-go/tokenizer/codec"
)

// Encoding names the tokenizer tokens are counted with: OpenAI's o200k_base, the one
// tokenizer served for Go. Claude's own is not published; docs/stats.md says what that
// means for the figures.
const Encoding = "o200k_base"

var (
	codecOnce sync.Once
	o200k     tokenizer.Codec
)

// Count returns the number of o200k_base tokens in text. The first call loads the
// vocabulary (tens of milliseconds).
func Count(text string) int {
	codecOnce.Do(func() { o200k = codec.NewO200kBase() })
	n, err := o200k.Count(text)
	if err != nil {
		// Count fails only on text it cannot split; a byte estimate beats nothing.
		return len(text) / 4
	}
	return n
}

// counter counts texts, remembering each one's count by its hash: the same tool
// definitions are counted again at every model request.
type counter struct {
	mu   sync.Mutex // guards seen
	seen map[[32]byte]int
}

// maxCounted bounds the counts remembered: past it they are forgotten all at once.
const maxCounted = 100000

func (c *counter) count(text []byte) int {
	h := sha256.Sum256(text)
	c.mu.Lock()
	n, ok := c.seen[h]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = Count(string(text))
	c.mu.Lock()
	if c.seen == nil || len(c.seen) >= maxCounted {
		c.seen = map[[32]byte]int{}
	}
	c.seen[h] = n
	c.mu.Unlock()
	return n
}

// Tokens returns the tokens in defs, counting each definition once.
func (r *Recorder) Tokens(defs []Def) int64 {
	var n int64
	for _, d := range defs {
		n += int64(r.counter.count(d.Raw))
	}
	return n
}

// Short writes a token count as people read it: 812, 3.4k, 351k, 1.2M.
func Short(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 10_000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + "k"
	case n < 1_000_000:
		return strconv.FormatInt((n+500)/1000, 10) + "k"
	default:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	}
}
