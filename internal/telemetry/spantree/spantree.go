// Package spantree keeps the spans a process ends and prints them as
// trees, one per trace: what `baton run --once --trace stdout` shows. It
// links the OpenTelemetry SDK, so only the CLI imports it, never a
// Lambda bootstrap.
package spantree

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Recorder is a span processor that keeps every span ended.
type Recorder struct {
	mu    sync.Mutex
	ended []sdktrace.ReadOnlySpan
}

var _ sdktrace.SpanProcessor = (*Recorder)(nil)

// NewProvider returns a tracer provider that samples every span into a
// new Recorder.
func NewProvider() (*sdktrace.TracerProvider, *Recorder) {
	r := &Recorder{}
	return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(r)), r
}

func (r *Recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (r *Recorder) OnEnd(s sdktrace.ReadOnlySpan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, s)
}

func (r *Recorder) Shutdown(context.Context) error   { return nil }
func (r *Recorder) ForceFlush(context.Context) error { return nil }

// Spans returns the spans ended so far.
func (r *Recorder) Spans() []sdktrace.ReadOnlySpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ended)
}

// Print writes spans to w as trees: each span on a line (name, duration,
// attributes without their "baton." prefix, status), its children below
// it, indented, in the order they started. A span whose parent was not
// recorded is a root; the roots are in the order they started, each
// trace's under a line naming it.
func Print(w io.Writer, spans []sdktrace.ReadOnlySpan) {
	byID := map[trace.SpanID]bool{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = true
	}
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent(); p.IsValid() && byID[p.SpanID()] {
			children[p.SpanID()] = append(children[p.SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	slices.SortStableFunc(roots, byStart)
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		fmt.Fprintf(w, "%s%s\n", strings.Repeat("  ", depth), line(s))
		kids := children[s.SpanContext().SpanID()]
		slices.SortStableFunc(kids, byStart)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	var last trace.TraceID
	for _, r := range roots {
		if id := r.SpanContext().TraceID(); id != last {
			fmt.Fprintf(w, "trace %s\n", id)
			last = id
		}
		walk(r, 1)
	}
}

// statementWidth bounds a statement's text on its span's line.
const statementWidth = 72

// statement is a statement's text on one line, shortened.
func statement(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > statementWidth {
		text = string(r[:statementWidth-1]) + "…"
	}
	return text
}

// line is one span's line.
func line(s sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	b.WriteString(s.Name())
	fmt.Fprintf(&b, " %s", s.EndTime().Sub(s.StartTime()).Round(10*time.Microsecond))
	for _, kv := range s.Attributes() {
		k := string(kv.Key)
		switch k {
		case "messaging.message.id", "baton.receive_count", "db.system.name", "db.operation.name":
			continue // noise in a tree (a statement's name is its operation)
		case "db.query.text":
			fmt.Fprintf(&b, " sql=%s", statement(kv.Value.AsString()))
			continue
		}
		fmt.Fprintf(&b, " %s=%s", strings.TrimPrefix(k, "baton."), kv.Value.String())
	}
	if n := len(s.Links()); n > 0 {
		fmt.Fprintf(&b, " links=%d", n)
	}
	if st := s.Status(); st.Description != "" {
		fmt.Fprintf(&b, " error=%q", st.Description)
	}
	return b.String()
}
