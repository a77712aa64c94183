package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Unit says how a figure and its reference are printed.
type Unit int

const (
	Count    Unit = iota // a plain number (calls, items)
	Duration             // seconds, printed as ms or s
	Rate                 // per second
	Bytes                // printed as MiB
)

// Goal is a target a row must reach.
type Goal struct {
	Text string // how the goal reads in the table, e.g. "≥ 80 %"
	// MetFunc reports whether the row reaches it.
	MetFunc func(Row) bool
}

// RatioAtLeast is the goal "figure ÷ reference ≥ min".
func RatioAtLeast(min float64) *Goal {
	return &Goal{
		Text:    "≥ " + strconv.FormatFloat(min*100, 'f', -1, 64) + " %",
		MetFunc: func(r Row) bool { return r.Ratio() >= min },
	}
}

// RatioAtMost is the goal "figure ÷ reference ≤ max".
func RatioAtMost(max float64) *Goal {
	return &Goal{
		Text:    "≤ " + strconv.FormatFloat(max*100, 'f', -1, 64) + " %",
		MetFunc: func(r Row) bool { return r.Ratio() <= max },
	}
}

// AtMost is the goal "figure ≤ max", in the row's unit.
func AtMost(max float64, u Unit) *Goal {
	return &Goal{
		Text:    "≤ " + format(max, u),
		MetFunc: func(r Row) bool { return r.Value <= max },
	}
}

// Row is one figure beside its reference.
type Row struct {
	Scenario string // the item number and name, e.g. "1 calls"
	Backend  string
	Figure   string // what was measured
	Value    float64
	// Reference is what Value is read against; RefText says what it is.
	Reference float64
	RefText   string
	Unit      Unit
	Goal      *Goal // nil: none
	// Note is printed after the figure, e.g. a failure that made the
	// value meaningless.
	Note string
}

// Ratio is Value ÷ Reference (NaN when the reference is 0).
func (r Row) Ratio() float64 {
	if r.Reference == 0 {
		return math.NaN()
	}
	return r.Value / r.Reference
}

// Met reports whether the row has a goal and reaches it.
func (r Row) Met() bool { return r.Goal != nil && r.Goal.MetFunc(r) }

// Markdown writes rows as one markdown table.
func Markdown(w io.Writer, rows []Row) error {
	var b strings.Builder
	b.WriteString("| # | backend | figure | value | reference | ratio | goal |\n")
	b.WriteString("|---|---|---|--:|---|--:|---|\n")
	for _, r := range rows {
		value := format(r.Value, r.Unit)
		if r.Note != "" {
			value += " (" + r.Note + ")"
		}
		ref := format(r.Reference, r.Unit)
		if r.RefText != "" {
			ref += " — " + r.RefText
		}
		goal := "—"
		if r.Goal != nil {
			mark := "❌ missed"
			if r.Met() {
				mark = "✅ met"
			}
			goal = r.Goal.Text + " " + mark
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
			cell(r.Scenario), cell(r.Backend), cell(r.Figure), cell(value), cell(ref), percent(r.Ratio()), cell(goal))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// GoalsMarkdown writes the rows that have a goal as one markdown table:
// each figure, its value (with its ratio to its reference when the goal
// is a ratio, and its note), the goal and whether the run met it. It is
// the goal lines of BENCHMARKS.md, generated from the run.
func GoalsMarkdown(w io.Writer, rows []Row) error {
	var b strings.Builder
	b.WriteString("| # | backend | figure | value | goal | result |\n")
	b.WriteString("|---|---|---|--:|---|---|\n")
	for _, r := range rows {
		if r.Goal == nil {
			continue
		}
		value := format(r.Value, r.Unit)
		if ratio := r.Ratio(); !math.IsNaN(ratio) && strings.Contains(r.Goal.Text, "%") {
			value += " = " + percent(ratio) + " of " + format(r.Reference, r.Unit)
		}
		if r.Note != "" {
			value += " (" + r.Note + ")"
		}
		result := "❌ not met"
		if r.Met() {
			result = "✅ met"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
			cell(r.Scenario), cell(r.Backend), cell(r.Figure), cell(value), cell(r.Goal.Text), result)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell escapes what would break a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func percent(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "—"
	case f >= 1:
		return strconv.FormatFloat(f*100, 'f', 0, 64) + " %"
	default:
		return strconv.FormatFloat(f*100, 'f', 1, 64) + " %"
	}
}

// format prints v in unit u with three significant digits or so.
func format(v float64, u Unit) string {
	if math.IsNaN(v) {
		return "—"
	}
	switch u {
	case Duration:
		d := time.Duration(v * float64(time.Second))
		switch {
		case d >= time.Second:
			return strconv.FormatFloat(v, 'f', 2, 64) + " s"
		case d >= time.Millisecond:
			return strconv.FormatFloat(v*1e3, 'f', sigDecimals(v*1e3), 64) + " ms"
		default:
			return strconv.FormatFloat(v*1e6, 'f', sigDecimals(v*1e6), 64) + " µs"
		}
	case Rate:
		return number(v) + " /s"
	case Bytes:
		return strconv.FormatFloat(v/(1<<20), 'f', 1, 64) + " MiB"
	default:
		return number(v)
	}
}

// number prints v with a thousands separator when large and up to three
// decimals when small.
func number(v float64) string {
	if v == math.Trunc(v) || math.Abs(v) >= 100 {
		s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
		return group(s)
	}
	return strconv.FormatFloat(v, 'f', sigDecimals(v), 64)
}

// sigDecimals is the decimals that show about three significant digits.
func sigDecimals(v float64) int {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return 0
	case a >= 10:
		return 1
	case a >= 1:
		return 2
	default:
		return 3
	}
}

// group puts a comma between thousands of an integer's digits.
func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
