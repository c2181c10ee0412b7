package stats

import (
	"cmp"
	"slices"
	"time"
)

// Row is a tally with its name (a client's, or a date) and what it saved.
type Row struct {
	Name  string `json:"name"`
	Saved int64  `json:"savedTokens"`
	Tally
}

// ServerRow is a server's tally over the report's days.
type ServerRow struct {
	Name  string `json:"name"`
	Saved int64  `json:"savedTokens"`
	ServerTally
}

// Report is what the store holds over the last days: what `toolsift stats` and the
// dashboard show.
type Report struct {
	Encoding string `json:"encoding"`
	// Today and Week sum every client today and over the last 7 days (UTC days).
	Today Row `json:"today"`
	Week  Row `json:"last7Days"`
	// Days has each day of the report, oldest first, a day with nothing included.
	Days []Row `json:"days"`
	// Clients and Servers sum the report's days, by most tokens saved.
	Clients []Row       `json:"clients"`
	Servers []ServerRow `json:"servers"`
	// Sessions holds the sessions of the report's days, by most tokens saved, at most
	// maxSessions (a day's sessions are kept 30 days).
	Sessions []SessionRow `json:"sessions"`
	// Misses holds the report's likely misses, newest first.
	Misses []Search `json:"misses"`
}

// SessionRow is a session's tally over the report's days.
type SessionRow struct {
	ID     string `json:"id"`
	Client string `json:"client"`
	Saved  int64  `json:"savedTokens"`
	Tally
}

// maxSessions bounds the sessions a report lists.
const maxSessions = 100

// maxMisses bounds the misses a report lists.
const maxMisses = 100

// Report sums the days days up to now's.
func (s *Store) Report(now time.Time, days int) (*Report, error) {
	now = now.UTC()
	first := now.AddDate(0, 0, -(days - 1))
	// The week's figures need a week, whatever days the report shows.
	from := first
	if week := now.AddDate(0, 0, -6); week.Before(from) {
		from = week
	}
	byDate, err := s.Days(from.Format(time.DateOnly), now.Format(time.DateOnly))
	if err != nil {
		return nil, err
	}
	rep := &Report{Encoding: Encoding, Today: Row{Name: "today"}, Week: Row{Name: "last 7 days"}}
	clients, servers, sessions := map[string]*Tally{}, map[string]*ServerTally{}, map[string]*SessionTally{}
	weekFrom := now.AddDate(0, 0, -6).Format(time.DateOnly)
	for date, d := range byDate {
		if date >= weekFrom {
			rep.Week.add(d.Total())
		}
	}
	for i := range days {
		date := first.AddDate(0, 0, i).Format(time.DateOnly)
		row := Row{Name: date}
		if d := byDate[date]; d != nil {
			row.Tally = d.Total()
			for name, t := range d.Clients {
				if clients[name] == nil {
					clients[name] = &Tally{}
				}
				clients[name].add(*t)
			}
			for name, t := range d.Servers {
				if servers[name] == nil {
					servers[name] = &ServerTally{}
				}
				servers[name].add(*t)
			}
			for id, t := range d.Sessions {
				if sessions[id] == nil {
					sessions[id] = &SessionTally{Client: t.Client}
				}
				sessions[id].add(t.Tally)
			}
		}
		row.Saved = row.Tally.Saved()
		rep.Days = append(rep.Days, row)
		if date == now.Format(time.DateOnly) {
			rep.Today.Tally = row.Tally
		}
	}
	rep.Today.Saved, rep.Week.Saved = rep.Today.Tally.Saved(), rep.Week.Tally.Saved()
	for name, t := range clients {
		rep.Clients = append(rep.Clients, Row{Name: cmp.Or(name, "(unnamed)"), Saved: t.Saved(), Tally: *t})
	}
	for name, t := range servers {
		rep.Servers = append(rep.Servers, ServerRow{Name: name, Saved: t.Saved(), ServerTally: *t})
	}
	rep.Sessions = []SessionRow{}
	for id, t := range sessions {
		rep.Sessions = append(rep.Sessions, SessionRow{ID: id, Client: t.Client, Saved: t.Saved(), Tally: t.Tally})
	}
	slices.SortFunc(rep.Sessions, func(a, b SessionRow) int { return cmp.Or(cmp.Compare(b.Saved, a.Saved), cmp.Compare(a.ID, b.ID)) })
	rep.Sessions = rep.Sessions[:min(len(rep.Sessions), maxSessions)]
	slices.SortFunc(rep.Clients, func(a, b Row) int { return cmp.Or(cmp.Compare(b.Saved, a.Saved), cmp.Compare(a.Name, b.Name)) })
	slices.SortFunc(rep.Servers, func(a, b ServerRow) int { return cmp.Or(cmp.Compare(b.Saved, a.Saved), cmp.Compare(a.Name, b.Name)) })
	searches, err := s.Searches(first.Truncate(24*time.Hour), maxSearches)
	if err != nil {
		return nil, err
	}
	rep.Misses = []Search{}
	for _, sr := range searches {
		if Miss(sr.Outcome) && len(rep.Misses) < maxMisses {
			rep.Misses = append(rep.Misses, sr)
		}
	}
	return rep, nil
}
