package postgresbackend_test

import (
	"testing"

	"github.com/batonhq/baton/internal/telemetry/telemetrytest"
)

// One tick of the reference job traced end to end on PostgreSQL: the
// trace context travels in the queue's attributes column.
func TestTrace(t *testing.T) {
	t.Parallel()
	telemetrytest.Run(t, openFresh(t))
}
