package sqlite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

// The writer's statements run under their caller's context made
// uncancellable; the statements' tracing looks its span up on each one,
// which must cost no allocation when tracing is off.
func TestUncancelledLooksUpWithoutAllocating(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	ctx := uncancelled(parent)
	cancel()
	require.NoError(t, ctx.Err(), "the caller's cancellation does not reach the write")
	require.Nil(t, ctx.Done())
	_, ok := ctx.Deadline()
	require.False(t, ok)
	require.Equal(t, "v", ctx.Value(key{}), "the caller's values do")
	allocs := testing.AllocsPerRun(100, func() {
		if trace.SpanFromContext(ctx).IsRecording() {
			t.Fatal("recording")
		}
	})
	require.Zero(t, allocs)
}

// A statement's span is named as pgx's tracer names PostgreSQL's: its
// operation, upper-cased.
func TestStatementOperation(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT 1":                             "SELECT",
		"\n\t  update items SET x = 1":         "UPDATE",
		"-- a comment\nINSERT INTO t VALUES 1": "INSERT",
		"SAVEPOINT write":                      "SAVEPOINT",
		"PRAGMA quick_check":                   "PRAGMA",
		"WITH x AS (SELECT 1) SELECT * FROM x": "WITH",
		"SELECT(1)":                            "SELECT",
		"":                                     "UNKNOWN",
		"-- only a comment":                    "UNKNOWN",
	} {
		require.Equal(t, want, operation(q), "%q", q)
	}
}
