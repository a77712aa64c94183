// Package emf writes metrics in CloudWatch Embedded Metric Format: one JSON
// object per line on the function's standard output, which CloudWatch Logs
// turns into metrics without an API call.
//
// A record is a JSON object with an "_aws" member holding the timestamp
// (Unix milliseconds) and one metric directive (namespace, one dimension
// set, metric names and units), and, at the root, one member per dimension
// (a string), per metric (a number, or an array of up to 100 numbers) and
// per property (any JSON value, searchable in Logs Insights but not a
// metric).
package emf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sync"
	"time"
)

// Limits of the format.
const (
	MaxMetrics         = 100 // metrics per directive
	MaxDimensions      = 30  // dimensions per dimension set
	MaxValues          = 100 // values per metric
	MaxNamespaceLength = 255
	MaxNameLength      = 1024
)

// Unit is a CloudWatch metric unit.
type Unit string

// The units baton uses; Valid accepts every CloudWatch unit.
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
	Seconds      Unit = "Seconds"
	None         Unit = "None"
)

var units = map[Unit]bool{
	"Seconds": true, "Microseconds": true, "Milliseconds": true,
	"Bytes": true, "Kilobytes": true, "Megabytes": true, "Gigabytes": true, "Terabytes": true,
	"Bits": true, "Kilobits": true, "Megabits": true, "Gigabits": true, "Terabits": true,
	"Percent": true, "Count": true,
	"Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true, "Gigabytes/Second": true, "Terabytes/Second": true,
	"Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true, "Gigabits/Second": true, "Terabits/Second": true,
	"Count/Second": true, "None": true,
}

// Valid reports whether u is a CloudWatch unit.
func (u Unit) Valid() bool { return units[u] }

// Metric is one metric of a record. Several values are aggregated by
// CloudWatch as separate samples (e.g. one latency per item).
type Metric struct {
	Name   string
	Unit   Unit
	Values []float64
}

// Record is one EMF log line.
type Record struct {
	Namespace  string
	Dimensions map[string]string // one dimension set made of all of them
	Metrics    []Metric
	Properties map[string]any // extra root members; not metrics
	Time       time.Time
}

// ErrInvalid matches every error Encode returns.
var ErrInvalid = errors.New("invalid EMF record")

type directive struct {
	Namespace  string       `json:"Namespace"`
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []definition `json:"Metrics"`
}

type definition struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit,omitempty"`
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Encode returns r as one EMF JSON object (no trailing newline). It returns
// an error matching ErrInvalid, naming the problem, when r breaks the
// format: an empty or long namespace, no metrics or too many, a metric
// without values or with too many, a NaN or infinite value, an unknown unit,
// too many dimensions, or a name used twice across dimensions, metrics and
// properties (or "_aws").
func Encode(r Record) ([]byte, error) {
	if err := validate(r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	root := make(map[string]any, 1+len(r.Dimensions)+len(r.Metrics)+len(r.Properties))
	for k, v := range r.Properties {
		root[k] = v
	}
	dims := append([]string{}, slices.Sorted(maps.Keys(r.Dimensions))...) // [] not null when empty
	for _, k := range dims {
		root[k] = r.Dimensions[k]
	}
	defs := make([]definition, 0, len(r.Metrics))
	for _, m := range r.Metrics {
		defs = append(defs, definition{Name: m.Name, Unit: m.Unit})
		if len(m.Values) == 1 {
			root[m.Name] = m.Values[0]
		} else {
			root[m.Name] = m.Values
		}
	}
	root["_aws"] = metadata{
		Timestamp: r.Time.UnixMilli(),
		CloudWatchMetrics: []directive{{
			Namespace:  r.Namespace,
			Dimensions: [][]string{dims},
			Metrics:    defs,
		}},
	}
	b, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return b, nil
}

func validate(r Record) error {
	switch {
	case r.Namespace == "":
		return errors.New("empty namespace")
	case len(r.Namespace) > MaxNamespaceLength:
		return fmt.Errorf("namespace longer than %d", MaxNamespaceLength)
	case len(r.Metrics) == 0:
		return errors.New("no metrics")
	case len(r.Metrics) > MaxMetrics:
		return fmt.Errorf("%d metrics, at most %d", len(r.Metrics), MaxMetrics)
	case len(r.Dimensions) > MaxDimensions:
		return fmt.Errorf("%d dimensions, at most %d", len(r.Dimensions), MaxDimensions)
	case r.Time.IsZero():
		return errors.New("zero time")
	}
	names := map[string]string{"_aws": "reserved"}
	claim := func(name, what string) error {
		if name == "" {
			return fmt.Errorf("empty %s name", what)
		}
		if len(name) > MaxNameLength {
			return fmt.Errorf("%s name longer than %d", what, MaxNameLength)
		}
		if prev, ok := names[name]; ok {
			return fmt.Errorf("%s name %q already used by a %s member", what, name, prev)
		}
		names[name] = what
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(r.Dimensions)) {
		if err := claim(k, "dimension"); err != nil {
			return err
		}
		if r.Dimensions[k] == "" {
			return fmt.Errorf("dimension %q has an empty value", k)
		}
	}
	for _, m := range r.Metrics {
		if err := claim(m.Name, "metric"); err != nil {
			return err
		}
		if m.Unit != "" && !m.Unit.Valid() {
			return fmt.Errorf("metric %q: unknown unit %q", m.Name, m.Unit)
		}
		if len(m.Values) == 0 || len(m.Values) > MaxValues {
			return fmt.Errorf("metric %q: %d values, want 1..%d", m.Name, len(m.Values), MaxValues)
		}
		for _, v := range m.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("metric %q: value %v is not finite", m.Name, v)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.Properties)) {
		if err := claim(k, "property"); err != nil {
			return err
		}
	}
	return nil
}

// Writer writes records as lines. It may be used concurrently.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer on w (os.Stdout in a Lambda function).
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write encodes r and writes it with a newline in one call.
func (w *Writer) Write(r Record) error {
	b, err := Encode(r)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write EMF record: %w", err)
	}
	return nil
}
