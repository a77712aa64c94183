package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	_ "time/tzdata" // zones read alike where the system has no zone database
)

// Schedule is a parsed schedule expression. The zero Schedule has no ticks.
type Schedule struct {
	expr string
	eng  engine
	zone string // ParseIn's time zone of a cron expression; "": UTC
}

// engine computes the ticks of one kind of expression. Both methods take
// and return UTC times.
type engine interface {
	next(t time.Time) time.Time // first tick strictly after t, or zero
	prev(t time.Time) time.Time // latest tick at or before t, or zero
}

// counter is an engine that can count the ticks in [from, to] without
// walking them.
type counter interface {
	count(from, to time.Time) int64
}

// Parse parses an EventBridge schedule expression: rate(value unit) or
// cron(minutes hours day-of-month month day-of-week year). See the package
// documentation for the dialect.
func Parse(expr string) (Schedule, error) {
	if i := strings.IndexFunc(expr, func(r rune) bool { return r != ' ' && (unicode.IsSpace(r) || !unicode.IsPrint(r)) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(expr[i:])
		return Schedule{}, &ParseError{Expr: expr, Msg: fmt.Sprintf("character %q at byte %d: only single spaces separate the parts", r, i)}
	}
	var (
		eng engine
		err error
	)
	switch kind(expr) {
	case "rate":
		eng, err = parseRate(expr, expr[len("rate("):len(expr)-1])
	case "cron":
		eng, err = parseCron(expr, expr[len("cron("):len(expr)-1])
	default:
		err = &ParseError{Expr: expr, Msg: "want rate(value unit) or cron(minutes hours day-of-month month day-of-week year)"}
	}
	if err != nil {
		return Schedule{}, err
	}
	return Schedule{expr: expr, eng: eng}, nil
}

// ParseIn parses expr as Parse does, with the fields of a cron expression
// read in the IANA time zone zone, as EventBridge Scheduler reads them
// with ScheduleExpressionTimezone: cron(0 9 * * ? *) in Europe/London
// ticks at 09:00 London time, 08:00 UTC in summer. "" and "UTC" are UTC.
// A rate's ticks do not depend on a time zone: rate(1 day) ticks at 00:00
// UTC whatever the zone. The ticks are still returned in UTC. An unknown
// zone is an error wrapping ErrUnknownZone that names it.
func ParseIn(expr, zone string) (Schedule, error) {
	loc, err := Location(zone)
	if err != nil {
		return Schedule{}, err
	}
	s, err := Parse(expr)
	if err != nil {
		return Schedule{}, err
	}
	if c, ok := s.eng.(*cron); ok && loc != time.UTC {
		s.eng, s.zone = c.in(loc), loc.String()
	}
	return s, nil
}

// ErrUnknownZone is matched by the error of Location and ParseIn for a
// time zone that is not an IANA name this program knows.
var ErrUnknownZone = errors.New("unknown time zone")

// Location returns the IANA time zone named zone ("" and "UTC": UTC), or an
// error wrapping ErrUnknownZone that names it. The zone database is built
// into the program (time/tzdata): a Lambda or container image without one
// reads zones alike.
func Location(zone string) (*time.Location, error) {
	if zone == "" || zone == "UTC" {
		return time.UTC, nil
	}
	// LoadLocation also takes "Local" and paths; a schedule's zone is an
	// IANA name, the same on every machine.
	if zone == "Local" || strings.ContainsAny(zone, `\`) || strings.HasPrefix(zone, "/") || strings.Contains(zone, "..") {
		return nil, fmt.Errorf("%w %q: want an IANA name such as Europe/London", ErrUnknownZone, zone)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("%w %q: want an IANA name such as Europe/London", ErrUnknownZone, zone)
	}
	return loc, nil
}

// Zone returns the time zone a cron expression's fields are read in
// (ParseIn), "" for UTC.
func (s Schedule) Zone() string { return s.zone }

// kind returns "rate" or "cron" for an expression of the form rate(...) or
// cron(...), and "" for anything else.
func kind(expr string) string {
	if !strings.HasSuffix(expr, ")") {
		return ""
	}
	for _, k := range []string{"rate", "cron"} {
		if strings.HasPrefix(expr, k+"(") {
			return k
		}
	}
	return ""
}

// String returns the expression s was parsed from.
func (s Schedule) String() string { return s.expr }

// Next returns the first tick strictly after t, in UTC, or the zero Time
// when there is none.
func (s Schedule) Next(t time.Time) time.Time {
	if s.eng == nil {
		return time.Time{}
	}
	return s.eng.next(t.UTC())
}

// Prev returns the latest tick at or before t, in UTC, or the zero Time
// when there is none. It is the nominal time of a trigger that arrived at t.
func (s Schedule) Prev(t time.Time) time.Time {
	if s.eng == nil {
		return time.Time{}
	}
	return s.eng.prev(t.UTC())
}

// Ticks returns every tick in [from, to], oldest first, in UTC. When there
// are more than max it returns no ticks and an error wrapping
// ErrTooManyTicks that states how many there are; cron ticks are counted by
// walking them, so past a million more than max the count reads "at least".
// from after to and a negative max are errors.
func (s Schedule) Ticks(from, to time.Time, max int) ([]time.Time, error) {
	from, to = from.UTC(), to.UTC()
	span := fmt.Sprintf("[%s, %s]", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	switch {
	case from.After(to):
		return nil, fmt.Errorf("%s: ticks in %s: start after end", s.expr, span)
	case max < 0:
		return nil, fmt.Errorf("%s: ticks in %s: negative limit %d", s.expr, span, max)
	case s.eng == nil:
		return nil, nil
	}
	if c, ok := s.eng.(counter); ok {
		if n := c.count(from, to); n > int64(max) {
			return nil, fmt.Errorf("%s: %d ticks in %s, more than %d: %w", s.expr, n, span, max, ErrTooManyTicks)
		}
	}
	var out []time.Time
	for t := s.eng.next(from.Add(-time.Nanosecond)); !t.IsZero() && !t.After(to); t = s.eng.next(t) {
		if len(out) == max {
			n, more := s.countFrom(t, to, countCap)
			atLeast := ""
			if more {
				atLeast = "at least "
			}
			return nil, fmt.Errorf("%s: %s%d ticks in %s, more than %d: %w", s.expr, atLeast, max+n, span, max, ErrTooManyTicks)
		}
		out = append(out, t)
	}
	return out, nil
}

// countCap bounds how far Ticks walks a cron expression to count the ticks
// of a range that is already over the limit.
const countCap = 1_000_000

// countFrom counts the ticks in [t, to] where t is a tick, walking at most
// limit of them; more reports that it stopped there.
func (s Schedule) countFrom(t, to time.Time, limit int) (n int, more bool) {
	for ; !t.IsZero() && !t.After(to); t = s.eng.next(t) {
		if n == limit {
			return n, true
		}
		n++
	}
	return n, false
}
