package emf_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/emf"
)

// checkSpec checks one line against the EMF specification's structure
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
// a JSON object whose "_aws" member has an integer Timestamp and a non-empty
// CloudWatchMetrics array of directives; each directive has a Namespace, a
// Dimensions array of arrays of at most 30 names, each naming a root string
// member, and Metrics whose Names name a root number or array of at most
// 100 numbers, with a valid Unit when given.
func checkSpec(line []byte) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	aws, ok := root["_aws"].(map[string]any)
	if !ok {
		return errors.New(`no "_aws" object`)
	}
	ts, ok := aws["Timestamp"].(json.Number)
	if !ok {
		return errors.New("_aws.Timestamp is not a number")
	}
	if _, err := ts.Int64(); err != nil {
		return fmt.Errorf("_aws.Timestamp %s is not an integer", ts)
	}
	dirs, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(dirs) == 0 {
		return errors.New("_aws.CloudWatchMetrics is not a non-empty array")
	}
	for i, d := range dirs {
		dir, ok := d.(map[string]any)
		if !ok {
			return fmt.Errorf("directive %d is not an object", i)
		}
		if ns, ok := dir["Namespace"].(string); !ok || ns == "" || len(ns) > 255 {
			return fmt.Errorf("directive %d: bad Namespace %v", i, dir["Namespace"])
		}
		sets, ok := dir["Dimensions"].([]any)
		if !ok {
			return fmt.Errorf("directive %d: Dimensions is not an array", i)
		}
		for _, s := range sets {
			set, ok := s.([]any)
			if !ok || len(set) > 30 {
				return fmt.Errorf("directive %d: dimension set %v is not an array of at most 30", i, s)
			}
			for _, n := range set {
				name, ok := n.(string)
				if !ok {
					return fmt.Errorf("directive %d: dimension name %v is not a string", i, n)
				}
				if _, ok := root[name].(string); !ok {
					return fmt.Errorf("directive %d: dimension %q has no string root member", i, name)
				}
			}
		}
		metrics, ok := dir["Metrics"].([]any)
		if !ok || len(metrics) == 0 || len(metrics) > 100 {
			return fmt.Errorf("directive %d: Metrics is not an array of 1..100", i)
		}
		for _, m := range metrics {
			def, ok := m.(map[string]any)
			if !ok {
				return fmt.Errorf("directive %d: metric %v is not an object", i, m)
			}
			name, ok := def["Name"].(string)
			if !ok || name == "" {
				return fmt.Errorf("directive %d: metric without a Name", i)
			}
			if u, has := def["Unit"]; has {
				if s, ok := u.(string); !ok || !emf.Unit(s).Valid() {
					return fmt.Errorf("metric %q: bad Unit %v", name, u)
				}
			}
			switch v := root[name].(type) {
			case json.Number:
			case []any:
				if len(v) == 0 || len(v) > 100 {
					return fmt.Errorf("metric %q: %d values", name, len(v))
				}
				for _, x := range v {
					if _, ok := x.(json.Number); !ok {
						return fmt.Errorf("metric %q: value %v is not a number", name, x)
					}
				}
			default:
				return fmt.Errorf("metric %q: root member is %T, want a number or an array of numbers", name, v)
			}
		}
	}
	return nil
}

func TestCheckSpecRejects(t *testing.T) {
	t.Parallel()
	// The checker must be able to fail, or the tests below prove nothing.
	bad := []string{
		`[]`,
		`{"x":1}`,
		`{"_aws":{"Timestamp":"now","CloudWatchMetrics":[{"Namespace":"n","Dimensions":[],"Metrics":[{"Name":"x"}]}]},"x":1}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[]}}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"","Dimensions":[],"Metrics":[{"Name":"x"}]}]},"x":1}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["job"]],"Metrics":[{"Name":"x"}]}]},"x":1}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[],"Metrics":[{"Name":"x"}]}]},"x":"1"}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[],"Metrics":[{"Name":"x","Unit":"Parsecs"}]}]},"x":1}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[],"Metrics":[{"Name":"x"}]}]},"x":[1,"2"]}`,
	}
	for _, b := range bad {
		require.Error(t, checkSpec([]byte(b)), b)
	}
	require.NoError(t, checkSpec([]byte(`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["job"]],"Metrics":[{"Name":"x","Unit":"Count"}]}]},"x":[1,2],"job":"fx"}`)))
}

func TestWriteMatchesSpec(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 12, 1, 2, 345_000_000, time.UTC)
	var buf bytes.Buffer
	w := emf.NewWriter(&buf)
	require.NoError(t, w.Write(emf.Record{
		Namespace:  "Baton",
		Dimensions: map[string]string{"Job": "fx", "Function": "consumer"},
		Metrics: []emf.Metric{
			{Name: "ItemsSucceeded", Unit: emf.Count, Values: []float64{6}},
			{Name: "TickToDone", Unit: emf.Milliseconds, Values: []float64{812.5, 901, 1200}},
		},
		Properties: map[string]any{"requestId": "req-1", "run": "fx@2026-11-21T12:01:00Z#1"},
		Time:       at,
	}))
	require.NoError(t, w.Write(emf.Record{
		Namespace: "Baton",
		Metrics:   []emf.Metric{{Name: "LeaseContention", Values: []float64{0}}},
		Time:      at,
	}))

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 2)
	for _, l := range lines {
		require.NoError(t, checkSpec([]byte(l)), l)
	}
	require.JSONEq(t, `{
		"_aws": {"Timestamp": 1795262462345, "CloudWatchMetrics": [{
			"Namespace": "Baton",
			"Dimensions": [["Function", "Job"]],
			"Metrics": [{"Name": "ItemsSucceeded", "Unit": "Count"}, {"Name": "TickToDone", "Unit": "Milliseconds"}]
		}]},
		"Job": "fx", "Function": "consumer",
		"ItemsSucceeded": 6, "TickToDone": [812.5, 901, 1200],
		"requestId": "req-1", "run": "fx@2026-11-21T12:01:00Z#1"
	}`, lines[0])
	require.JSONEq(t, `{
		"_aws": {"Timestamp": 1795262462345, "CloudWatchMetrics": [{
			"Namespace": "Baton", "Dimensions": [[]], "Metrics": [{"Name": "LeaseContention"}]
		}]},
		"LeaseContention": 0
	}`, lines[1])
}

func TestEncodeRejects(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	ok := emf.Metric{Name: "Items", Unit: emf.Count, Values: []float64{1}}
	many := func(n int) []float64 { return make([]float64, n) }
	manyMetrics := make([]emf.Metric, 101)
	for i := range manyMetrics {
		manyMetrics[i] = emf.Metric{Name: fmt.Sprintf("m%d", i), Values: []float64{1}}
	}
	manyDims := map[string]string{}
	for i := range 31 {
		manyDims[fmt.Sprintf("d%d", i)] = "v"
	}
	cases := []struct {
		name string
		r    emf.Record
		want string
	}{
		{"no namespace", emf.Record{Metrics: []emf.Metric{ok}, Time: at}, "empty namespace"},
		{"long namespace", emf.Record{Namespace: strings.Repeat("n", 256), Metrics: []emf.Metric{ok}, Time: at}, "namespace longer"},
		{"no metrics", emf.Record{Namespace: "Baton", Time: at}, "no metrics"},
		{"too many metrics", emf.Record{Namespace: "Baton", Metrics: manyMetrics, Time: at}, "101 metrics"},
		{"too many dimensions", emf.Record{Namespace: "Baton", Dimensions: manyDims, Metrics: []emf.Metric{ok}, Time: at}, "31 dimensions"},
		{"zero time", emf.Record{Namespace: "Baton", Metrics: []emf.Metric{ok}}, "zero time"},
		{"no values", emf.Record{Namespace: "Baton", Metrics: []emf.Metric{{Name: "x"}}, Time: at}, `metric "x": 0 values`},
		{"too many values", emf.Record{Namespace: "Baton", Metrics: []emf.Metric{{Name: "x", Values: many(101)}}, Time: at}, "101 values"},
		{"NaN", emf.Record{Namespace: "Baton", Metrics: []emf.Metric{{Name: "x", Values: []float64{math.NaN()}}}, Time: at}, "not finite"},
		{"infinity", emf.Record{Namespace: "Baton", Metrics: []emf.Metric{{Name: "x", Values: []float64{math.Inf(1)}}}, Time: at}, "not finite"},
		{"unknown unit", emf.Record{Namespace: "Baton", Metrics: []emf.Metric{{Name: "x", Unit: "Parsecs", Values: []float64{1}}}, Time: at}, `unknown unit "Parsecs"`},
		{"empty metric name", emf.Record{Namespace: "Baton", Metrics: []emf.Metric{{Values: []float64{1}}}, Time: at}, "empty metric name"},
		{"metric named like a dimension", emf.Record{Namespace: "Baton", Dimensions: map[string]string{"Items": "x"}, Metrics: []emf.Metric{ok}, Time: at}, `metric name "Items" already used by a dimension`},
		{"metric twice", emf.Record{Namespace: "Baton", Metrics: []emf.Metric{ok, ok}, Time: at}, `already used by a metric`},
		{"property named like a metric", emf.Record{Namespace: "Baton", Metrics: []emf.Metric{ok}, Properties: map[string]any{"Items": 1}, Time: at}, `property name "Items" already used`},
		{"reserved name", emf.Record{Namespace: "Baton", Metrics: []emf.Metric{ok}, Properties: map[string]any{"_aws": 1}, Time: at}, "reserved"},
		{"empty dimension value", emf.Record{Namespace: "Baton", Dimensions: map[string]string{"Job": ""}, Metrics: []emf.Metric{ok}, Time: at}, `dimension "Job" has an empty value`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			err := emf.NewWriter(&buf).Write(tc.r)
			require.ErrorIs(t, err, emf.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
			require.Zero(t, buf.Len(), "nothing written on error")
		})
	}
}
