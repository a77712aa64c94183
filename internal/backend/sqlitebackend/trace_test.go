package sqlitebackend_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/telemetry"
	"github.com/batonhq/baton/internal/telemetry/telemetrytest"
)

// One tick of the reference job traced end to end on SQLite: a
// coordinator span, an item span per item linked to it, a duplicate's
// span; and the store's statements as spans nested under the steps that
// ran them, named as PostgreSQL's are (the statement's operation).
func TestTrace(t *testing.T) {
	t.Parallel()
	tp, rec := telemetrytest.Recorder(t)
	b, err := sqlitebackend.OpenWith(t.Context(), filepath.Join(t.TempDir(), "baton.db"), &sqlitebackend.Options{TracerProvider: tp})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	tr := telemetrytest.Trace(t, b, tp, rec)

	// statements are the store's spans under parent, by operation.
	statements := func(parent trace.SpanContext) map[string]int {
		ops := map[string]int{}
		for _, s := range telemetrytest.Descendants(rec, parent) {
			if s.InstrumentationScope().Name == telemetry.ScopeName {
				continue
			}
			require.Equal(t, "sqlite", telemetrytest.Attr(s, "db.system.name"), s.Name())
			require.Equal(t, s.Name(), telemetrytest.Attr(s, "db.operation.name"))
			require.NotEmpty(t, telemetrytest.Attr(s, "db.query.text"), s.Name())
			require.Equal(t, trace.SpanKindClient, s.SpanKind())
			ops[s.Name()]++
		}
		return ops
	}
	stepOf := func(item sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
		for _, s := range telemetrytest.Descendants(rec, item.SpanContext()) {
			if s.Name() == name && s.Parent().SpanID() == item.SpanContext().SpanID() {
				return s
			}
		}
		require.Failf(t, "no step", "%s under %s", name, telemetrytest.Attr(item, string(telemetry.KeyItem)))
		return nil
	}
	for _, step := range []string{telemetry.SpanLease, telemetry.SpanOpen} {
		s := stepOf(tr.Coordinator, step)
		require.NotEmpty(t, statements(s.SpanContext()), "statements under the coordinator's %s", step)
	}
	for _, a := range append([]string{fx.DXY}, fx.Assets...) {
		item := tr.Items[a]
		claim := statements(stepOf(item, telemetry.SpanClaim).SpanContext())
		require.Positive(t, claim["UPDATE"]+claim["INSERT"], "%s's claim writes: %v", a, claim)
		require.NotEmpty(t, statements(stepOf(item, telemetry.SpanComplete).SpanContext()), "%s's completion", a)
	}
	// A statement outside any traced step (the writer's BEGIN and COMMIT,
	// an idle consumer's poll) starts no trace of its own.
	for _, s := range rec.Ended() {
		if s.InstrumentationScope().Name != telemetry.ScopeName {
			require.True(t, s.Parent().IsValid(), "statement span %s has a parent", s.Name())
		}
	}
}
