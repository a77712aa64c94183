package schedule

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// rateUnit is one unit a rate expression may name.
type rateUnit struct {
	seconds int64
	plural  bool
	other   string // the same unit in the other number
}

var rateUnits = map[string]rateUnit{
	"minute":  {60, false, "minutes"},
	"minutes": {60, true, "minute"},
	"hour":    {3600, false, "hours"},
	"hours":   {3600, true, "hour"},
	"day":     {86400, false, "days"},
	"days":    {86400, true, "day"},
}

// maxRateSeconds keeps a rate's period within a time.Duration.
const maxRateSeconds = math.MaxInt64 / int64(time.Second)

// rate ticks at the multiples of period seconds since the Unix epoch.
type rate struct{ period int64 }

func parseRate(expr, body string) (engine, error) {
	fail := func(format string, args ...any) error {
		return &ParseError{Expr: expr, Msg: fmt.Sprintf(format, args...)}
	}
	parts := strings.Split(body, " ")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return nil, fail("want rate(value unit) with one space, as in rate(5 minutes)")
	}
	value, name := parts[0], parts[1]
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 1 || !isDigits(value) || value[0] == '0' {
		return nil, fail("value %q is not a positive integer without leading zeros", value)
	}
	unit, ok := rateUnits[name]
	switch {
	case !ok:
		return nil, fail("unknown unit %q: want minute, minutes, hour, hours, day or days", name)
	case n == 1 && unit.plural:
		return nil, fail("value 1 takes the singular unit %q", unit.other)
	case n > 1 && !unit.plural:
		return nil, fail("value %d takes the plural unit %q", n, unit.other)
	case n > maxRateSeconds/unit.seconds:
		return nil, fail("value %d is too large", n)
	}
	return rate{period: n * unit.seconds}, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// index returns the number of the latest tick at or before t: the tick
// index*period seconds after the epoch.
func (r rate) index(t time.Time) int64 {
	s := t.Unix() // rounds down: t's nanoseconds are never negative
	q := s / r.period
	if s%r.period < 0 {
		q--
	}
	return q
}

func (r rate) at(i int64) time.Time { return time.Unix(i*r.period, 0).UTC() }

func (r rate) prev(t time.Time) time.Time { return r.at(r.index(t)) }

func (r rate) next(t time.Time) time.Time { return r.at(r.index(t) + 1) }

func (r rate) count(from, to time.Time) int64 {
	first := r.index(from)
	if r.at(first).Before(from) {
		first++
	}
	if n := r.index(to) - first + 1; n > 0 {
		return n
	}
	return 0
}
