package clients

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// entry reads one server entry of a client file, remembering which keys it used so that
// the others can be reported.
type entry struct {
	m    map[string]any
	used map[string]bool
	s    *Server
	// late are headers already in toolsift's syntax, added after the client's variables
	// are translated.
	late map[string]string
}

// note adds a note to s once: the same problem in several values of an entry is one note.
func (s *Server) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !slices.Contains(s.Notes, msg) {
		s.Notes = append(s.Notes, msg)
	}
}

// get returns the value of key and marks it used; ok is false for a key that is missing
// or null.
func (e *entry) get(key string) (v any, ok bool) {
	v, ok = e.m[key]
	if ok {
		e.used[key] = true
	}
	return v, ok && v != nil
}

// str reads a string; numbers and booleans are taken as their text.
func (e *entry) str(key string) string {
	v, ok := e.get(key)
	if !ok {
		return ""
	}
	if s, ok := scalarText(v); ok {
		return s
	}
	e.s.note("%s: want a string, got %s: ignored", key, describe(v))
	return ""
}

func (e *entry) strs(key string) []string {
	v, ok := e.get(key)
	if !ok {
		return nil
	}
	if s, ok := v.(string); ok {
		e.s.note("%s: want a list of strings, got a string: took it as a list of one", key)
		return []string{s}
	}
	list, ok := v.([]any)
	if !ok {
		e.s.note("%s: want a list of strings, got %s: ignored", key, describe(v))
		return nil
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := scalarText(item)
		if !ok {
			e.s.note("%s[%d]: want a string, got %s: left out", key, i, describe(item))
			continue
		}
		out = append(out, s)
	}
	return out
}

func (e *entry) strMap(key string) map[string]string {
	v, ok := e.get(key)
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		e.s.note("%s: want an object of names to strings, got %s: ignored", key, describe(v))
		return nil
	}
	out := make(map[string]string, len(m))
	for k, item := range m {
		s, ok := scalarText(item)
		if !ok {
			e.s.note("%s.%s: want a string, got %s: left out", key, k, describe(item))
			continue
		}
		out[k] = s
	}
	return out
}

func (e *entry) boolean(key string) (value, ok bool) {
	v, ok := e.get(key)
	if !ok {
		return false, false
	}
	b, ok := v.(bool)
	if !ok {
		e.s.note("%s: want true or false, got %s: ignored", key, describe(v))
	}
	return b, ok
}

func (e *entry) number(key string) (float64, bool) {
	v, ok := e.get(key)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	}
	e.s.note("%s: want a number, got %s: ignored", key, describe(v))
	return 0, false
}

// duration reads a number of unit (time.Second, time.Millisecond) as a duration.
func (e *entry) duration(key string, unit time.Duration) time.Duration {
	n, ok := e.number(key)
	if !ok {
		return 0
	}
	d := time.Duration(n * float64(unit))
	if d <= 0 {
		e.s.note("%s: %v is not a positive time: ignored", key, n)
		return 0
	}
	return d
}

// unused lists the keys the entry has that nothing read, sorted.
func (e *entry) unused() []string {
	var keys []string
	for k := range e.m {
		if !e.used[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64, int64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
