package embedding

import (
	"log/slog"
	"sync"
	"time"
)

// health is the query path's state after failures: after one, searches rank by words
// alone at once, for a rest that doubles with each failure. It logs the first failure,
// then a line a minute at most, counting the searches ranked by words alone, and the
// recovery.
type health struct {
	// Fixed at creation.
	log       *slog.Logger
	alwaysAsk bool

	mu     sync.Mutex // guards the fields below
	until  time.Time  // no query asks before this
	rest   time.Duration
	err    error // the last failure
	down   bool  // since a failure, until a success
	since  int   // searches ranked by words alone since the last log line
	total  int   // all searches ranked by words alone
	logged time.Time
}

func (h *health) resting() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down && !h.alwaysAsk && time.Now().Before(h.until) {
		h.since++
		h.total++
		return errResting
	}
	return nil
}

func (h *health) failed(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	h.rest = min(max(2*h.rest, minRest), maxRest)
	h.until, h.err = now.Add(h.rest), err
	h.since++
	h.total++
	if !h.down || now.Sub(h.logged) >= logEvery {
		h.log.Warn("query vectors failing; searches rank by words alone", "error", err, "searches", h.since, "retry_in", h.rest)
		h.since, h.logged = 0, now
	}
	h.down = true
}

func (h *health) ok() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		h.log.Info("query vectors back", "searches_by_words_alone", h.since)
	}
	h.down, h.rest, h.since = false, 0, 0
}
