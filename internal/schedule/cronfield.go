package schedule

import (
	"fmt"
	"strconv"
	"strings"
)

// The positions of the cron fields.
const (
	fMinutes = iota
	fHours
	fDayOfMonth
	fMonth
	fDayOfWeek
	fYear
)

// fieldSpec is what one cron field accepts.
type fieldSpec struct {
	name     string
	min, max int
	stepMax  int
	names    map[string]int
}

var cronFields = [...]fieldSpec{
	fMinutes:    {name: "minutes", min: 0, max: 59, stepMax: 59},
	fHours:      {name: "hours", min: 0, max: 23, stepMax: 23},
	fDayOfMonth: {name: "day-of-month", min: 1, max: 31, stepMax: 31},
	fMonth: {name: "month", min: 1, max: 12, stepMax: 12, names: map[string]int{
		"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
	}},
	fDayOfWeek: {name: "day-of-week", min: 1, max: 7, stepMax: 7, names: map[string]int{
		"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7,
	}},
	fYear: {name: "year", min: 1970, max: 2199, stepMax: 2199 - 1970},
}

// dayKind is the form of a day-of-month or day-of-week field.
type dayKind int

const (
	dayAny            dayKind = iota // "?"
	dayList                          // days of the month, or of the week
	dayLast                          // L in day-of-month
	dayLastWeekday                   // LW
	dayNearestWeekday                // nW
	weekdayLast                      // nL in day-of-week
	weekdayNth                       // n#k
)

// dayRule is a parsed day-of-month or day-of-week field. Days of the week
// keep the AWS numbering, 1 = Sunday.
type dayRule struct {
	kind dayKind
	set  []int // dayList: the days, ascending
	all  bool  // dayList written as "*"
	n, k int   // the day of nW, nL and n#k; the k of n#k
}

// fieldError reports a problem with item, a part of field f.
type fieldError struct {
	field int
	item  string
	msg   string
}

func errItem(f int, item, format string, args ...any) *fieldError {
	return &fieldError{field: f, item: item, msg: fmt.Sprintf(format, args...)}
}

// parseList parses a list of values, ranges and steps into the ascending
// set of values it names; all reports a lone "*".
func parseList(f int, text string) (set []int, all bool, ferr *fieldError) {
	spec := cronFields[f]
	items := strings.Split(text, ",")
	in := make([]bool, spec.max-spec.min+1)
	for _, item := range items {
		switch {
		case item == "":
			return nil, false, errItem(f, text, "empty list item")
		case item == "*" || item == "?":
			if len(items) > 1 {
				return nil, false, errItem(f, item, "must stand alone, not in a list")
			}
			if item == "?" {
				return nil, false, errItem(f, item, `only day-of-month and day-of-week may be "?"`)
			}
			all = true
			for i := range in {
				in[i] = true
			}
			continue
		}
		if err := parseItem(f, item, in); err != nil {
			return nil, false, err
		}
	}
	for i, ok := range in {
		if ok {
			set = append(set, spec.min+i)
		}
	}
	return set, all, nil
}

// parseItem marks in the values named by item: a, a-b, a/s, a-b/s or */s.
func parseItem(f int, item string, in []bool) *fieldError {
	spec := cronFields[f]
	base, stepText, stepped := strings.Cut(item, "/")
	step := 1
	if stepped {
		if f == fDayOfWeek {
			return errItem(f, item, "steps (/) are not allowed in day-of-week")
		}
		n, ok := atoi(stepText)
		if !ok {
			return errItem(f, item, "step %q is not a number", stepText)
		}
		if n < 1 || n > spec.stepMax {
			return errItem(f, item, "step %d out of range 1-%d", n, spec.stepMax)
		}
		step = n
		if base == "" {
			return errItem(f, item, "a step needs a start, as in 0/%d or */%d", n, n)
		}
	}
	var first, last int
	switch lo, hi, ranged := strings.Cut(base, "-"); {
	case base == "*" && stepped:
		first, last = spec.min, spec.max
	case ranged:
		var err *fieldError
		if first, err = value(f, item, lo, "start"); err != nil {
			return err
		}
		if last, err = value(f, item, hi, "end"); err != nil {
			return err
		}
		if first > last && f == fYear {
			return errItem(f, item, "range start %d is after its end %d", first, last)
		}
	default:
		var err *fieldError
		if first, err = value(f, item, base, "value"); err != nil {
			return err
		}
		last = first
		if stepped {
			last = spec.max
		}
	}
	// A range whose start is after its end wraps around the field.
	width := spec.max - spec.min + 1
	if last < first {
		last += width
	}
	for v := first; v <= last; v += step {
		in[(v-spec.min)%width] = true
	}
	return nil
}

// value parses one number or name of field f; role names the part of item
// it is ("start", "end", "value") for the error.
func value(f int, item, text, role string) (int, *fieldError) {
	spec := cronFields[f]
	if v, ok := spec.names[upperASCII(text)]; ok {
		return v, nil
	}
	v, ok := atoi(text)
	if !ok {
		if spec.names != nil {
			return 0, errItem(f, item, "%s %q is not a number or a three-letter name", role, text)
		}
		return 0, errItem(f, item, "%s %q is not a number", role, text)
	}
	if v < spec.min || v > spec.max {
		if role == "value" {
			return 0, errItem(f, item, "value out of range %d-%d", spec.min, spec.max)
		}
		return 0, errItem(f, item, "%s %d out of range %d-%d", role, v, spec.min, spec.max)
	}
	return v, nil
}

// atoi parses a short unsigned decimal number.
func atoi(s string) (int, bool) {
	if len(s) > 4 || !isDigits(s) {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// upperASCII upper-cases the ASCII letters of s, and only those: names and
// the letters L and W may be written in either case.
func upperASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

// parseDayOfMonth parses field 3: "?", L, LW, nW or a list.
func parseDayOfMonth(text string) (dayRule, *fieldError) {
	f := fDayOfMonth
	u := upperASCII(text)
	switch {
	case u == "?":
		return dayRule{kind: dayAny}, nil
	case u == "L":
		return dayRule{kind: dayLast}, nil
	case u == "LW":
		return dayRule{kind: dayLastWeekday}, nil
	case strings.HasPrefix(u, "L-"):
		return dayRule{}, errItem(f, text, "offsets from the last day (L-n) are not supported")
	case u == "W":
		return dayRule{}, errItem(f, text, "W needs a day, as in 15W")
	case strings.ContainsAny(u, "LW") && strings.Contains(u, ","):
		return dayRule{}, errItem(f, text, "L, LW and nW must stand alone, not in a list")
	case strings.HasSuffix(u, "W"):
		n, err := value(f, text, text[:len(text)-1], "day")
		if err != nil {
			return dayRule{}, err
		}
		return dayRule{kind: dayNearestWeekday, n: n}, nil
	}
	set, all, err := parseList(f, text)
	if err != nil {
		return dayRule{}, err
	}
	return dayRule{kind: dayList, set: set, all: all}, nil
}

// parseDayOfWeek parses field 5: "?", L, nL, n#k or a list.
func parseDayOfWeek(text string) (dayRule, *fieldError) {
	f := fDayOfWeek
	u := upperASCII(text)
	switch {
	case u == "?":
		return dayRule{kind: dayAny}, nil
	case u == "L":
		return dayRule{kind: dayList, set: []int{7}}, nil // Saturday
	case strings.ContainsAny(u, "L#") && strings.Contains(u, ","):
		return dayRule{}, errItem(f, text, "nL and n#k must stand alone, not in a list")
	case strings.HasSuffix(u, "L"):
		n, err := value(f, text, text[:len(text)-1], "day")
		if err != nil {
			return dayRule{}, err
		}
		return dayRule{kind: weekdayLast, n: n}, nil
	case strings.Contains(text, "#"):
		day, nth, _ := strings.Cut(text, "#")
		n, err := value(f, text, day, "day")
		if err != nil {
			return dayRule{}, err
		}
		k, ok := atoi(nth)
		if !ok || k < 1 || k > 5 {
			return dayRule{}, errItem(f, text, "occurrence %q out of range 1-5", nth)
		}
		return dayRule{kind: weekdayNth, n: n, k: k}, nil
	}
	set, all, err := parseList(f, text)
	if err != nil {
		return dayRule{}, err
	}
	return dayRule{kind: dayList, set: set, all: all}, nil
}
