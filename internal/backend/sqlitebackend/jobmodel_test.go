package sqlitebackend_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/jobmodeltest"
)

// harness is the embedded store under the job model suite: a fresh
// database file per case; the store makes job queues as they are named,
// and its priority classes share one pool (an empty receive is a local
// query).
var harness = jobmodeltest.Harness{
	Engine: "sqlite",
	OpenFunc: func(t *testing.T, _ ...string) backend.Backend {
		b, err := sqlitebackend.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, b.Close()) })
		return b
	},
	Caps: jobmodeltest.Capabilities{PriorityPool: true},
}

// The job model end to end on the embedded store: every case of the
// suite, grouped (TestJobModel/<group>/<case>).
func TestJobModel(t *testing.T) {
	t.Parallel()
	jobmodeltest.Run(t, harness)
}
