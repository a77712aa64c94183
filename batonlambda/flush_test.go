package batonlambda

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// flushing is a tracer provider that counts its flushes.
type flushing struct {
	tracenoop.TracerProvider
	n   int
	err error
}

func (f *flushing) ForceFlush(context.Context) error { f.n++; return f.err }

// The providers that can flush are flushed after each invocation; one
// that cannot is left alone, and a failed flush fails nothing.
func TestProvidersFlushedAfterEachInvocation(t *testing.T) {
	t.Parallel()
	tp := &flushing{err: errors.New("collector away")}
	fs := (&Options{TracerProvider: tp, MeterProvider: nil}).flushers()
	require.Len(t, fs, 1)
	fs.flush(t.Context())
	fs.flush(t.Context())
	require.Equal(t, 2, tp.n)
	require.Empty(t, (&Options{TracerProvider: tracenoop.NewTracerProvider()}).flushers())
	require.Empty(t, (*Options)(nil).flushers())
}
