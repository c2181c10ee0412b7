// Package stats counts what toolsift saves and finds: per day and client, the tokens a
// direct listing of the servers would have sent with each model request against what
// toolsift sent; each search, with what the model did next (a hit, or a likely miss); and
// calls by server and outcome. It keeps no argument value and no result.
//
// The counts live in one bbolt file in the state folder (Store), which every toolsift
// process of the user writes to in turn: bbolt takes the OS's file lock for a writer, and a
// process opens the file only for the moment of a write, so stdio servers started by several
// clients never wait on each other for long. bbolt over SQLite: a single pure-Go package with
// no cgo and no query language, and what is kept here is a few keyed records a day.
package stats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Outcomes of a search: what the model did next in the same session.
const (
	Pending = ""                    // nothing yet
	Hit     = "hit"                 // it called one of the results
	Again   = "searched again"      // it searched again before calling anything
	Other   = "called another tool" // it called a tool that was not a result
	Nothing = "called nothing"      // the session ended with no call
)

// Miss reports whether outcome is a likely miss.
func Miss(outcome string) bool { return outcome == Again || outcome == Other || outcome == Nothing }

// Keep is how long searches are kept one by one; older ones live on only in their day's
// counts, and days older than that are rolled up into their month.
const Keep = 30 * 24 * time.Hour

// maxSearches bounds the searches kept one by one, whatever their age.
const maxSearches = 20000

// Tally counts one client's model requests, tokens and searches over a day.
type Tally struct {
	Sessions int `json:"sessions"`
	// Requests counts the model requests seen: each tool call the model made (a search
	// too) came from one, which carried the tools listed then.
	Requests int `json:"requests"`
	// Direct is what those requests would have carried had every tool been listed
	// directly; Sent is what toolsift's lists carried, plus its search results.
	Direct int64 `json:"directTokens"`
	Sent   int64 `json:"sentTokens"`
	// Searches counts tool_search calls; Hits and Misses those resolved so.
	Searches int `json:"searches"`
	Hits     int `json:"hits"`
	Misses   int `json:"misses"`
}

// Saved is the tokens not sent.
func (t Tally) Saved() int64 { return t.Direct - t.Sent }

func (t *Tally) add(o Tally) {
	t.Sessions += o.Sessions
	t.Requests += o.Requests
	t.Direct += o.Direct
	t.Sent += o.Sent
	t.Searches += o.Searches
	t.Hits += o.Hits
	t.Misses += o.Misses
}

// ServerTally counts one server's side of a day: the tokens its tools would have cost
// listed directly against what its listed tools cost, and its calls by outcome (the audit
// log's outcomes).
type ServerTally struct {
	Direct int64          `json:"directTokens"`
	Sent   int64          `json:"sentTokens"`
	Calls  map[string]int `json:"calls,omitempty"`
}

// Saved is the tokens not sent.
func (t ServerTally) Saved() int64 { return t.Direct - t.Sent }

func (t *ServerTally) add(o ServerTally) {
	t.Direct += o.Direct
	t.Sent += o.Sent
	for k, n := range o.Calls {
		if t.Calls == nil {
			t.Calls = map[string]int{}
		}
		t.Calls[k] += n
	}
}

// Day holds a day's counts (or a month's, once rolled up), by client name, by server, and
// by session. Sessions are kept apart from the rest (a record each, a day's only), so that
// a day of many sessions does not make every write rewrite all of them.
type Day struct {
	Clients  map[string]*Tally        `json:"clients,omitempty"`
	Servers  map[string]*ServerTally  `json:"servers,omitempty"`
	Sessions map[string]*SessionTally `json:"-"`
}

// SessionTally is a session's tally, with its client's name.
type SessionTally struct {
	Client string `json:"client"`
	Tally
}

func (d *Day) session(id, client string) *Tally {
	if d.Sessions == nil {
		d.Sessions = map[string]*SessionTally{}
	}
	t := d.Sessions[id]
	if t == nil {
		t = &SessionTally{Client: client}
		d.Sessions[id] = t
	}
	return &t.Tally
}

func (d *Day) client(name string) *Tally {
	if d.Clients == nil {
		d.Clients = map[string]*Tally{}
	}
	t := d.Clients[name]
	if t == nil {
		t = &Tally{}
		d.Clients[name] = t
	}
	return t
}

func (d *Day) server(name string) *ServerTally {
	if d.Servers == nil {
		d.Servers = map[string]*ServerTally{}
	}
	t := d.Servers[name]
	if t == nil {
		t = &ServerTally{}
		d.Servers[name] = t
	}
	return t
}

func (d *Day) add(o *Day) {
	for name, t := range o.Clients {
		d.client(name).add(*t)
	}
	for name, t := range o.Servers {
		d.server(name).add(*t)
	}
	for id, t := range o.Sessions {
		d.session(id, t.Client).add(t.Tally)
	}
}

// Total sums the day's clients.
func (d *Day) Total() Tally {
	var t Tally
	for _, c := range d.Clients {
		t.add(*c)
	}
	return t
}

// Search is one tool_search and what followed it.
type Search struct {
	// Key orders searches by time and is unique across processes.
	Key     string    `json:"-"`
	Time    time.Time `json:"time"`
	Session string    `json:"session"`
	Client  string    `json:"client"`
	Query   string    `json:"query"`
	// Results holds the exposed names found, best first.
	Results []string `json:"results"`
	Outcome string   `json:"outcome"`
	// Called is the tool the model called next, when it was one of the results; Used is
	// the tool it called in the end after a miss (searching again or not), with its server
	// and its name there, where known.
	Called     string `json:"called,omitempty"`
	Used       string `json:"used,omitempty"`
	UsedServer string `json:"usedServer,omitempty"`
	UsedName   string `json:"usedName,omitempty"`
	// Fixed holds the keywords added to Used for this miss (see Store.MarkFixed).
	Fixed []string `json:"fixed,omitempty"`
}

// Store is the stats file. Its methods may be called from several goroutines and
// processes at once.
type Store struct {
	path    string
	timeout time.Duration
}

var (
	bucketDays     = []byte("days")
	bucketSessions = []byte("sessions") // DATE/SESSION → a SessionTally
	bucketSearches = []byte("searches")
	bucketMeta     = []byte("meta")
	keySearches    = []byte("searches") // in meta: how many searches are kept
)

// maxSessionsPerDay bounds the sessions a day keeps one by one; past it a session counts in
// its client's figures only.
const maxSessionsPerDay = 5000

// Open returns the store in dir (made if missing), in the file stats.db.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	return &Store{path: filepath.Join(dir, "stats.db"), timeout: 5 * time.Second}, nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// update runs fn in a write transaction, holding the file only for it.
func (s *Store) update(fn func(tx *bolt.Tx) error) error {
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{Timeout: s.timeout})
	if err != nil {
		return s.openError(err)
	}
	defer db.Close()
	return db.Update(fn)
}

// view runs fn in a read transaction; a store never written reads as empty, as does one
// being made (its writer creates the file before it locks it).
func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	if st, err := os.Stat(s.path); errors.Is(err, os.ErrNotExist) || err == nil && st.Size() == 0 {
		return nil
	}
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{Timeout: s.timeout, ReadOnly: true})
	if err != nil {
		return s.openError(err)
	}
	defer db.Close()
	return db.View(fn)
}

// openError says what to do about a store that does not open.
func (s *Store) openError(err error) error {
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return fmt.Errorf("stats: %s is held by another toolsift process for over %v; try again in a moment: %w", s.path, s.timeout, err)
	case errors.Is(err, bolt.ErrInvalid), errors.Is(err, bolt.ErrVersionMismatch), errors.Is(err, bolt.ErrChecksum):
		return fmt.Errorf("stats: %s is damaged; move it aside (its counts are lost) and toolsift starts a new one: %w", s.path, err)
	}
	return fmt.Errorf("stats: opening %s: %w", s.path, err)
}

// batch is what a Recorder writes at once.
type batch struct {
	days     map[string]*Day // by date, YYYY-MM-DD in UTC
	searches map[string]*Search
}

func (b *batch) empty() bool { return len(b.days) == 0 && len(b.searches) == 0 }

// write adds b's counts to the store's and puts its searches, then rolls up what is older
// than Keep as of now.
func (s *Store) write(b *batch, now time.Time) error {
	return s.update(func(tx *bolt.Tx) error {
		var buckets [4]*bolt.Bucket
		for i, name := range [][]byte{bucketDays, bucketSessions, bucketSearches, bucketMeta} {
			var err error
			if buckets[i], err = tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		days, sessions, searches, meta := buckets[0], buckets[1], buckets[2], buckets[3]
		for date, d := range b.days {
			if err := addDay(days, date, d); err != nil {
				return err
			}
			if err := addSessions(sessions, date, d.Sessions); err != nil {
				return err
			}
		}
		n := searchCount(meta)
		for key, sr := range b.searches {
			data, err := json.Marshal(sr)
			if err != nil {
				return err
			}
			if searches.Get([]byte(key)) == nil {
				n++
			}
			if err := searches.Put([]byte(key), data); err != nil {
				return err
			}
		}
		n, err := rollUp(days, sessions, searches, now, n)
		if err != nil {
			return err
		}
		return meta.Put(keySearches, []byte(strconv.Itoa(n)))
	})
}

// searchCount is how many searches the store keeps; counted once, when the count is
// missing (a store of an earlier toolsift).
func searchCount(meta *bolt.Bucket) int {
	if n, err := strconv.Atoi(string(meta.Get(keySearches))); err == nil {
		return n
	}
	if b := meta.Tx().Bucket(bucketSearches); b != nil {
		return b.Stats().KeyN
	}
	return 0
}

// addSessions adds a day's session tallies to the store's, each under DATE/SESSION, up to
// maxSessionsPerDay sessions a day.
func addSessions(b *bolt.Bucket, date string, tallies map[string]*SessionTally) error {
	if len(tallies) == 0 {
		return nil
	}
	prefix := []byte(date + "/")
	have := -1
	for id, t := range tallies {
		key := append(slices.Clone(prefix), id...)
		var cur SessionTally
		if data := b.Get(key); data != nil {
			if err := json.Unmarshal(data, &cur); err != nil {
				return fmt.Errorf("stats: session %s: %w", key, err)
			}
		} else {
			if have < 0 {
				have = 0
				c := b.Cursor()
				for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
					have++
				}
			}
			if have >= maxSessionsPerDay {
				continue
			}
			have++
		}
		cur.Client = t.Client
		cur.add(t.Tally)
		data, err := json.Marshal(&cur)
		if err != nil {
			return err
		}
		if err := b.Put(key, data); err != nil {
			return err
		}
	}
	return nil
}

func addDay(days *bolt.Bucket, key string, d *Day) error {
	var cur Day
	if data := days.Get([]byte(key)); data != nil {
		if err := json.Unmarshal(data, &cur); err != nil {
			return fmt.Errorf("stats: day %s: %w", key, err)
		}
	}
	cur.add(d)
	data, err := json.Marshal(&cur)
	if err != nil {
		return err
	}
	return days.Put([]byte(key), data)
}

// rollUp deletes the searches older than Keep, and the oldest past maxSearches (n are
// kept), merges the days older than Keep into their month (a key of YYYY-MM), and deletes
// their sessions. It returns how many searches are kept.
func rollUp(days, sessions, searches *bolt.Bucket, now time.Time, n int) (int, error) {
	cutoff := now.Add(-Keep).UTC()
	oldest := []byte(cutoff.Format(keyTime))
	c := searches.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.First() {
		if string(k) >= string(oldest) && n <= maxSearches {
			break
		}
		if err := c.Delete(); err != nil {
			return n, err
		}
		n--
	}
	cutDate := cutoff.Format(time.DateOnly)
	var old [][]byte
	c = days.Cursor()
	for k, _ := c.First(); k != nil && string(k) < cutDate; k, _ = c.Next() {
		if len(k) == len(time.DateOnly) {
			old = append(old, slices.Clone(k))
		}
	}
	for _, k := range old {
		var d Day
		if err := json.Unmarshal(days.Get(k), &d); err != nil {
			return n, fmt.Errorf("stats: day %s: %w", k, err)
		}
		if err := addDay(days, string(k[:7]), &d); err != nil {
			return n, err
		}
		if err := days.Delete(k); err != nil {
			return n, err
		}
	}
	c = sessions.Cursor()
	for k, _ := c.First(); k != nil && string(k) < cutDate; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// keyTime starts each search's key: sorting keys sorts by time.
const keyTime = "2006-01-02T15:04:05.000000000Z"

// Days returns the days from..to (YYYY-MM-DD, inclusive) that have counts, by date.
func (s *Store) Days(from, to string) (map[string]*Day, error) {
	out := map[string]*Day{}
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketDays)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek([]byte(from)); k != nil && string(k) <= to; k, v = c.Next() {
			if len(k) != len(time.DateOnly) {
				continue
			}
			var d Day
			if err := json.Unmarshal(v, &d); err != nil {
				return fmt.Errorf("stats: day %s: %w", k, err)
			}
			out[string(k)] = &d
		}
		b = tx.Bucket(bucketSessions)
		if b == nil {
			return nil
		}
		c = b.Cursor()
		for k, v := c.Seek([]byte(from)); k != nil && string(k[:min(len(k), len(to))]) <= to; k, v = c.Next() {
			date, id, _ := strings.Cut(string(k), "/")
			d := out[date]
			if d == nil {
				d = &Day{}
				out[date] = d
			}
			var t SessionTally
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("stats: session %s: %w", k, err)
			}
			d.session(id, t.Client).add(t.Tally)
		}
		return nil
	})
	return out, err
}

// Searches returns the searches made at since or later, newest first, at most limit.
func (s *Store) Searches(since time.Time, limit int) ([]Search, error) {
	var out []Search
	from := []byte(since.UTC().Format(keyTime))
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSearches)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil && string(k) >= string(from) && len(out) < limit; k, v = c.Prev() {
			var sr Search
			if err := json.Unmarshal(v, &sr); err != nil {
				return fmt.Errorf("stats: search %s: %w", k, err)
			}
			sr.Key = string(k)
			out = append(out, sr)
		}
		return nil
	})
	return out, err
}

// MarkFixed records that words were added to the tool a missed search led to, so that the
// miss shows as fixed.
func (s *Store) MarkFixed(key string, words []string) error {
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSearches)
		var data []byte
		if b != nil {
			data = b.Get([]byte(key))
		}
		if data == nil {
			return fmt.Errorf("stats: no search %q (searches are kept %v)", key, Keep)
		}
		var sr Search
		if err := json.Unmarshal(data, &sr); err != nil {
			return fmt.Errorf("stats: search %s: %w", key, err)
		}
		for _, w := range words {
			if !slices.Contains(sr.Fixed, w) {
				sr.Fixed = append(sr.Fixed, w)
			}
		}
		data, err := json.Marshal(&sr)
		if err != nil {
			return err
		}
		return b.Put([]byte(key), data)
	})
}

// Search returns the search with the given key.
func (s *Store) Search(key string) (Search, error) {
	var sr Search
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSearches)
		if b == nil {
			return nil
		}
		if data := b.Get([]byte(key)); data != nil {
			sr.Key = key
			return json.Unmarshal(data, &sr)
		}
		return nil
	})
	if err == nil && sr.Key == "" {
		err = fmt.Errorf("stats: no search %q (searches are kept %v)", key, Keep)
	}
	return sr, err
}

// bboltTx is bbolt's transaction, named for the tests.
type bboltTx = bolt.Tx

// readDay reads the day (or month) key into d.
func readDay(tx *bolt.Tx, key string, d *Day) error {
	b := tx.Bucket(bucketDays)
	if b == nil {
		return nil
	}
	if data := b.Get([]byte(key)); data != nil {
		return json.Unmarshal(data, d)
	}
	return nil
}
