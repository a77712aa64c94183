package schedule

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The oracle: random cron expressions are generated together with the sets
// of values they mean, and the ticks of the parsed expression over a range
// are compared with the ticks worked out from those sets and the calendar.

// field is a generated field's range of values and its names, if any.
type field struct {
	lo, hi int
	starLo int // where */s starts, when not lo
	names  []string
	steps  bool // steps (/) allowed
	wrap   bool // ranges may wrap around
}

// value draws one value of [lo, hi] within f, written as a number, or as a
// name in random case when f has names.
func (f field) value(t *rapid.T, label string, lo, hi int) (string, int) {
	v := rapid.IntRange(lo, hi).Draw(t, label)
	if f.names != nil && rapid.Bool().Draw(t, label+" as name") {
		name := f.names[v-f.lo]
		if rapid.Bool().Draw(t, label+" lower case") {
			name = strings.ToLower(name)
		}
		return name, v
	}
	return fmt.Sprint(v), v
}

// item draws one list item and the values it stands for, at most
// maxValues of them.
func (f field) item(t *rapid.T, label string, maxValues int) (string, []int) {
	var vals []int
	maxStep := min(f.hi-f.lo+1, f.hi)
	form := rapid.IntRange(0, 4).Draw(t, label+" form")
	switch {
	case form == 1: // a-b, short
		at, a := f.value(t, label+" start", f.lo, f.hi)
		bt, b := f.value(t, label+" end", a, min(a+maxValues-1, f.hi))
		for v := a; v <= b; v++ {
			vals = append(vals, v)
		}
		return at + "-" + bt, vals
	case form == 2 && f.wrap: // a-b wrapping around
		at, a := f.value(t, label+" start", f.hi-maxValues/2+1, f.hi)
		bt, b := f.value(t, label+" end", f.lo, f.lo+maxValues/2-1)
		for v := a; v <= f.hi; v++ {
			vals = append(vals, v)
		}
		for v := f.lo; v <= b; v++ {
			vals = append(vals, v)
		}
		return at + "-" + bt, vals
	case form == 3 && f.steps: // a/s or */s
		step := rapid.IntRange((f.hi-f.lo+maxValues)/maxValues, maxStep).Draw(t, label+" step")
		text, a := "*", f.lo
		if f.starLo != 0 {
			a = f.starLo
		}
		if rapid.Bool().Draw(t, label+" from a value") {
			a = rapid.IntRange(f.lo, f.hi).Draw(t, label+" start")
			text = fmt.Sprint(a)
		}
		for v := a; v <= f.hi; v += step {
			vals = append(vals, v)
		}
		return fmt.Sprintf("%s/%d", text, step), vals
	case form == 4 && f.steps: // a-b/s
		step := rapid.IntRange(1, maxStep).Draw(t, label+" step")
		a := rapid.IntRange(f.lo, f.hi).Draw(t, label+" start")
		b := rapid.IntRange(a, min(f.hi, a+step*(maxValues-1))).Draw(t, label+" end")
		for v := a; v <= b; v += step {
			vals = append(vals, v)
		}
		return fmt.Sprintf("%d-%d/%d", a, b, step), vals
	}
	text, v := f.value(t, label, f.lo, f.hi)
	return text, []int{v}
}

// list draws a whole field: "*" when star is allowed, or a list of one to
// three items; the values come back sorted and without duplicates.
func (f field) list(t *rapid.T, label string, maxValues int, star bool) (string, []int) {
	if star && rapid.IntRange(0, 3).Draw(t, label+" star") == 0 {
		var all []int
		for v := f.lo; v <= f.hi; v++ {
			all = append(all, v)
		}
		return "*", all
	}
	var texts []string
	var vals []int
	for i := range rapid.IntRange(1, 3).Draw(t, label+" items") {
		text, vs := f.item(t, fmt.Sprintf("%s %d", label, i), maxValues)
		texts = append(texts, text)
		vals = append(vals, vs...)
	}
	slices.Sort(vals)
	return strings.Join(texts, ","), slices.Compact(vals)
}

var (
	genMinutes    = field{lo: 0, hi: 59, steps: true, wrap: true}
	genHours      = field{lo: 0, hi: 23, steps: true, wrap: true}
	genDayOfMonth = field{lo: 1, hi: 31, steps: true, wrap: true}
	genMonth      = field{lo: 1, hi: 12, steps: true, wrap: true, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}}
	genDayOfWeek  = field{lo: 1, hi: 7, wrap: true, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}}
	genYear       = field{lo: 2025, hi: 2030, starLo: 1970, steps: true} // a part of 1970-2199
)

// oracle is the meaning of a generated expression.
type oracle struct {
	minutes, hours, months, years []int
	daysFunc                      func(y int, m time.Month, d int) bool
}

func lastDay(y int, m time.Month) int { return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day() }

func weekday(y int, m time.Month, d int) time.Weekday {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()
}

// nearestWeekday is the day nW fires on in a month, or 0.
func nearestWeekday(y int, m time.Month, n int) int {
	last := lastDay(y, m)
	if n > last {
		return 0
	}
	switch weekday(y, m, n) {
	case time.Saturday:
		if n == 1 {
			return 3
		}
		return n - 1
	case time.Sunday:
		if n == last {
			return n - 2
		}
		return n + 1
	}
	return n
}

// genDays draws the day-of-month and day-of-week fields, one of them "?".
func genDays(t *rapid.T) (dom, dow string, match func(y int, m time.Month, d int) bool) {
	if rapid.Bool().Draw(t, "by day-of-month") {
		switch rapid.IntRange(0, 3).Draw(t, "day-of-month form") {
		case 0:
			return "L", "?", func(y int, m time.Month, d int) bool { return d == lastDay(y, m) }
		case 1:
			return "LW", "?", func(y int, m time.Month, d int) bool {
				w := lastDay(y, m)
				for weekday(y, m, w) == time.Saturday || weekday(y, m, w) == time.Sunday {
					w--
				}
				return d == w
			}
		case 2:
			n := rapid.IntRange(1, 31).Draw(t, "nW")
			return fmt.Sprintf("%dW", n), "?", func(y int, m time.Month, d int) bool { return d == nearestWeekday(y, m, n) }
		default:
			text, days := genDayOfMonth.list(t, "day-of-month", 10, true)
			return text, "?", func(y int, m time.Month, d int) bool { return slices.Contains(days, d) }
		}
	}
	// Day-of-week: 1 = Sunday.
	aws := func(y int, m time.Month, d int) int { return int(weekday(y, m, d)) + 1 }
	switch rapid.IntRange(0, 3).Draw(t, "day-of-week form") {
	case 0:
		return "?", "L", func(y int, m time.Month, d int) bool { return aws(y, m, d) == 7 }
	case 1:
		text, n := genDayOfWeek.value(t, "nL", 1, 7)
		return "?", text + "L", func(y int, m time.Month, d int) bool {
			return aws(y, m, d) == n && d+7 > lastDay(y, m)
		}
	case 2:
		text, n := genDayOfWeek.value(t, "n#k", 1, 7)
		k := rapid.IntRange(1, 5).Draw(t, "k")
		return "?", fmt.Sprintf("%s#%d", text, k), func(y int, m time.Month, d int) bool {
			return aws(y, m, d) == n && (d-1)/7 == k-1
		}
	default:
		text, days := genDayOfWeek.list(t, "day-of-week", 4, true)
		return "?", text, func(y int, m time.Month, d int) bool { return slices.Contains(days, aws(y, m, d)) }
	}
}

func TestCronMatchesOracle(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2029, 3, 1, 0, 0, 0, 0, time.UTC) // through February 2028
	rapid.Check(t, func(t *rapid.T) {
		var o oracle
		var fields [6]string
		fields[fMinutes], o.minutes = genMinutes.list(t, "minutes", 3, false)
		fields[fHours], o.hours = genHours.list(t, "hours", 4, false)
		fields[fDayOfMonth], fields[fDayOfWeek], o.daysFunc = genDays(t)
		fields[fMonth], o.months = genMonth.list(t, "month", 6, true)
		fields[fYear], o.years = genYear.list(t, "year", 3, true)
		if fields[fYear] == "*" {
			o.years = nil // every year
		}
		expr := "cron(" + strings.Join(fields[:], " ") + ")"

		var want []time.Time
		for day := from; !day.After(to); day = day.AddDate(0, 0, 1) {
			y, m, d := day.Date()
			if (o.years != nil && !slices.Contains(o.years, y)) || !slices.Contains(o.months, int(m)) || !o.daysFunc(y, m, d) {
				continue
			}
			for _, h := range o.hours {
				for _, min := range o.minutes {
					if tick := time.Date(y, m, d, h, min, 0, 0, time.UTC); !tick.After(to) {
						want = append(want, tick)
					}
				}
			}
		}

		s, err := Parse(expr)
		if len(want) == 0 && err != nil {
			require.ErrorContains(t, err, "never fires", expr) // e.g. 31W in February only
			return
		}
		require.NoError(t, err, expr)
		got, err := s.Ticks(from, to, 1<<20)
		require.NoError(t, err, expr)
		if i, w, g := firstDiff(want, got); i >= 0 {
			t.Fatalf("%s: tick %d of %d: want %s, got %s", expr, i, len(want), w, g)
		}
	})
}

// firstDiff returns the first index where want and got differ and the
// values there ("none" past the end), or -1.
func firstDiff(want, got []time.Time) (int, string, string) {
	at := func(ts []time.Time, i int) string {
		if i < len(ts) {
			return ts[i].Format(time.RFC3339Nano)
		}
		return "none"
	}
	for i := range max(len(want), len(got)) {
		if w, g := at(want, i), at(got, i); w != g {
			return i, w, g
		}
	}
	return -1, "", ""
}
