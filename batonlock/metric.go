package batonlock

import (
	"io"
	"time"

	"github.com/batonhq/baton/internal/emf"
)

// Metric names a Locker emits through Options.MetricFunc.
const (
	// MetricContention: one refused acquisition of Key.
	MetricContention = "LockContention"
	// MetricEscalated: a refusal found Key escalated: acquirers refused
	// by the same holder for three TTL cycles in a row.
	MetricEscalated = "LockEscalated"
)

// Metric is one value a Locker emits: a count of Name for Key at At.
type Metric struct {
	Name  string
	Key   string
	Value float64
	At    time.Time
}

// EMFNamespace is the CloudWatch namespace EMF writes the metrics to.
const EMFNamespace = "baton"

// EMF returns a MetricFunc that writes each metric to w as a CloudWatch
// Embedded Metric Format line (a Lambda function's standard output), in
// the namespace EMFNamespace with the dimension "lock" (the key). Lines
// that cannot be written are dropped.
func EMF(w io.Writer) func(Metric) {
	ew := emf.NewWriter(w)
	return func(m Metric) {
		_ = ew.Write(emf.Record{
			Namespace:  EMFNamespace,
			Dimensions: map[string]string{"lock": m.Key},
			Metrics:    []emf.Metric{{Name: m.Name, Unit: emf.Count, Values: []float64{m.Value}}},
			Time:       m.At,
		})
	}
}

func (l *Locker) emit(m Metric) {
	if l.metric != nil {
		l.metric(m)
	}
}
