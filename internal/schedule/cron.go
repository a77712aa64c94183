package schedule

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/cronexpr"
)

// The span of time cron ticks are computed in: the years of EventBridge's
// grammar, 1970–2199. The engine's own years stop at 2099 (engineEnd);
// the ticks of 2100–2199 are those of a calendar-identical year the
// engine knows (proxyYear).
var (
	cronStart = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	cronEnd   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC) // exclusive
	engineEnd = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC) // exclusive
	lastYear  = cronEnd.Year() - 1
	engineTop = engineEnd.Year() - 1
)

// cron is a parsed cron expression. The fields are kept for reference; the
// ticks come from expr, the same expression in the engine's dialect.
type cron struct {
	minutes, hours, months, years []int
	dom, dow                      dayRule
	expr                          *cronexpr.Expression // the years up to 2099; nil when there are none
	anyYear                       *cronexpr.Expression // every year: the proxies' ticks
	// loc is the time zone the fields are read in (ParseIn); nil: UTC.
	loc *time.Location
}

// in returns c read in the time zone loc.
func (c *cron) in(loc *time.Location) *cron {
	cp := *c
	cp.loc = loc
	return &cp
}

func (c *cron) location() *time.Location {
	if c.loc == nil {
		return time.UTC
	}
	return c.loc
}

func parseCron(expr, body string) (engine, error) {
	fields := strings.Split(body, " ")
	if slices.Contains(fields, "") {
		return nil, &ParseError{Expr: expr, Msg: "separate the fields by single spaces, with none before the first or after the last"}
	}
	if len(fields) != len(cronFields) {
		return nil, &ParseError{Expr: expr, Msg: fmt.Sprintf("want 6 fields (minutes hours day-of-month month day-of-week year), got %d", len(fields))}
	}
	c, ferr := parseCronFields(fields)
	if ferr != nil {
		return nil, &ParseError{Expr: expr, Field: ferr.field + 1, Msg: fmt.Sprintf("%q: %s", ferr.item, ferr.msg)}
	}
	if years := engineYears(c.years); len(years) > 0 {
		e, err := cronexpr.Parse(c.engineExpr(list(years, fYear)))
		if err != nil {
			return nil, &ParseError{Expr: expr, Msg: fmt.Sprintf("cannot be evaluated: %v", err)}
		}
		c.expr = e
	}
	e, err := cronexpr.Parse(c.engineExpr("*"))
	if err != nil {
		return nil, &ParseError{Expr: expr, Msg: fmt.Sprintf("cannot be evaluated: %v", err)}
	}
	c.anyYear = e
	if c.next(cronStart.Add(-time.Second)).IsZero() {
		return nil, &ParseError{Expr: expr, Msg: fmt.Sprintf("never fires between %d and %d", cronStart.Year(), lastYear)}
	}
	return c, nil
}

// parseCronFields parses the six fields.
func parseCronFields(fields []string) (*cron, *fieldError) {
	c := &cron{}
	var err *fieldError
	if c.minutes, _, err = parseList(fMinutes, fields[fMinutes]); err != nil {
		return nil, err
	}
	if c.hours, _, err = parseList(fHours, fields[fHours]); err != nil {
		return nil, err
	}
	if c.dom, err = parseDayOfMonth(fields[fDayOfMonth]); err != nil {
		return nil, err
	}
	if c.months, _, err = parseList(fMonth, fields[fMonth]); err != nil {
		return nil, err
	}
	if c.dow, err = parseDayOfWeek(fields[fDayOfWeek]); err != nil {
		return nil, err
	}
	if c.years, _, err = parseList(fYear, fields[fYear]); err != nil {
		return nil, err
	}
	switch domAny, dowAny := c.dom.kind == dayAny, c.dow.kind == dayAny; {
	case domAny && dowAny:
		return nil, errItem(fDayOfWeek, fields[fDayOfWeek], `day-of-month and day-of-week can't both be "?"`)
	case !domAny && !dowAny:
		return nil, errItem(fDayOfWeek, fields[fDayOfWeek], `one of day-of-month and day-of-week must be "?" (day-of-month is %q)`, fields[fDayOfMonth])
	}
	return c, nil
}

// engineExpr writes c in the engine's seven-field dialect: seconds first,
// day-of-week counted from 0 = Sunday, years up to 2099. Lists, ranges and
// steps go over as the explicit values they stand for, because the engine
// reads some of them differently from AWS: it drops a range whose start is
// after its end instead of wrapping it, and takes 7 as Sunday. L alone in
// day-of-week, which the engine does not know, has become Saturday.
func (c *cron) engineExpr(years string) string {
	return strings.Join([]string{
		"0",
		list(c.minutes, fMinutes),
		list(c.hours, fHours),
		c.dom.engineField(0),
		list(c.months, fMonth),
		c.dow.engineField(-1),
		years,
	}, " ")
}

// engineYears returns the years of ys the engine knows (up to 2099).
func engineYears(ys []int) []int {
	n := 0
	for n < len(ys) && ys[n] <= engineTop {
		n++
	}
	return ys[:n]
}

// proxyYear returns a year of 1970–2099 whose calendar is y's: the same
// weekday on January 1st and the same leap day, so that every cron field
// matches the same dates in both.
func proxyYear(y int) int {
	jan1 := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).Weekday()
	leap := isLeap(y)
	for p := engineTop; ; p-- {
		if time.Date(p, 1, 1, 0, 0, 0, 0, time.UTC).Weekday() == jan1 && isLeap(p) == leap {
			return p
		}
	}
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

// list writes the values vs of field f, or "*" when they are all the
// values the engine knows.
func list(vs []int, f int) string {
	spec := cronFields[f]
	max := spec.max
	if f == fYear {
		max = engineTop
	}
	if len(vs) == max-spec.min+1 {
		return "*"
	}
	return join(vs, 0)
}

// engineField writes r in the engine's dialect, adding shift to every day
// number.
func (r dayRule) engineField(shift int) string {
	switch r.kind {
	case dayAny:
		return "?"
	case dayLast:
		return "L"
	case dayLastWeekday:
		return "LW"
	case dayNearestWeekday:
		return strconv.Itoa(r.n+shift) + "W"
	case weekdayLast:
		return strconv.Itoa(r.n+shift) + "L"
	case weekdayNth:
		return strconv.Itoa(r.n+shift) + "#" + strconv.Itoa(r.k)
	}
	if r.all {
		return "*"
	}
	return join(r.set, shift)
}

func join(vs []int, shift int) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(v + shift))
	}
	return b.String()
}

func (c *cron) next(t time.Time) time.Time {
	t = t.In(c.location())
	for {
		n := c.nextIn(t)
		if n.IsZero() {
			return n
		}
		// A local time the clocks go through twice (the autumn change)
		// ticks once, at its first occurrence, as in EventBridge
		// Scheduler; one they skip (spring) does not tick at all, which
		// the engine already does.
		if !secondOccurrence(n) {
			return n.UTC()
		}
		t = n
	}
}

// secondOccurrence reports whether the wall clock of t (in its location)
// was already shown by an earlier instant, the clocks having been set back
// by up to two hours in between.
func secondOccurrence(t time.Time) bool {
	if t.Location() == time.UTC {
		return false
	}
	for _, back := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		e := t.Add(-back)
		if e.Year() == t.Year() && e.YearDay() == t.YearDay() && e.Hour() == t.Hour() && e.Minute() == t.Minute() {
			return true
		}
	}
	return false
}

// nextIn is next with t in c's time zone: the engine reads the fields
// in t's location.
func (c *cron) nextIn(t time.Time) time.Time {
	loc := c.location()
	if t.Before(cronStart) {
		t = cronStart.Add(-time.Second).In(loc)
	}
	if !t.Before(cronEnd) {
		return time.Time{}
	}
	if c.expr != nil && t.Before(engineEnd) {
		// Next keeps scratch state in the Expression: a copy per call
		// keeps c safe for concurrent use.
		e := *c.expr
		if n := e.Next(t); !n.IsZero() {
			return n
		}
	}
	for _, y := range c.years {
		if y <= engineTop || y < t.Year() {
			continue
		}
		// The year's ticks are its proxy's, moved to it.
		p := proxyYear(y)
		from := time.Date(p, 1, 1, 0, 0, 0, 0, loc).Add(-time.Second)
		if y == t.Year() {
			from = time.Date(p, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc)
		}
		e := *c.anyYear
		if n := e.Next(from); !n.IsZero() && n.Year() == p {
			return time.Date(y, n.Month(), n.Day(), n.Hour(), n.Minute(), n.Second(), 0, loc)
		}
	}
	return time.Time{}
}

// prev finds the latest tick at or before t with next alone: it widens a
// window (lo, hi] backwards from t until the window holds a tick, then
// halves it around the latest one.
func (c *cron) prev(t time.Time) time.Time {
	if t.Before(cronStart) {
		return time.Time{}
	}
	if !t.Before(cronEnd) {
		t = cronEnd.Add(-time.Second)
	}
	// Ticks fall on whole minutes, and so do lo and hi from here on.
	floor := cronStart.Add(-time.Minute)
	hi := t.Truncate(time.Minute)
	has := func(lo, hi time.Time) bool { // a tick in (lo, hi]?
		n := c.next(lo)
		return !n.IsZero() && !n.After(hi)
	}
	// Invariant: no tick in (hi, t].
	lo := hi
	for w := time.Minute; ; w *= 2 {
		lo = hi.Add(-w)
		if lo.Before(floor) {
			lo = floor
		}
		if has(lo, hi) {
			break
		}
		if lo.Equal(floor) {
			return time.Time{}
		}
		hi = lo
	}
	// Invariant: a tick in (lo, hi], none in (hi, t].
	for hi.Sub(lo) > time.Minute {
		mid := lo.Add(hi.Sub(lo) / time.Minute / 2 * time.Minute)
		if has(mid, hi) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
