package postgresbackend_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/pgtest"
	"github.com/batonhq/baton/internal/postgres"
	"github.com/batonhq/baton/internal/queue"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// A database Setup never touched is refused with what to run; after
// Setup (twice: it is idempotent) the backend opens with the queues and
// the redrive limit Setup stored.
func TestOpenNeedsSetup(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	_, err := postgresbackend.Open(t.Context(), postgresbackend.Params{DSN: dsn})
	require.ErrorIs(t, err, postgresbackend.ErrNotSetUp)
	require.Contains(t, err.Error(), "baton setup --backend postgres")

	res, err := postgresbackend.Setup(t.Context(), dsn, 3)
	require.NoError(t, err)
	require.NotEmpty(t, res.Applied)
	require.Equal(t, postgres.SchemaVersion(), res.Version)
	res, err = postgresbackend.Setup(t.Context(), dsn, 3)
	require.NoError(t, err)
	require.Empty(t, res.Applied)

	b, err := postgresbackend.Open(t.Context(), postgresbackend.Params{DSN: dsn})
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, "postgres", b.Name)
	require.Equal(t, 3, b.MaxReceives)
	require.NotNil(t, b.DeadLetter)
	require.Equal(t, postgresbackend.DefaultReceiveWait, b.ReceiveWait)
}

func TestOpenRefusesBadParams(t *testing.T) {
	t.Parallel()
	_, err := postgresbackend.Open(t.Context(), postgresbackend.Params{})
	require.ErrorContains(t, err, postgresbackend.EnvDSN)
	_, err = postgresbackend.Setup(t.Context(), " ", 0)
	require.ErrorContains(t, err, postgresbackend.EnvDSN)
}

func TestRedact(t *testing.T) {
	t.Parallel()
	require.Equal(t, "postgres://u:xxxxx@db:5432/baton", postgresbackend.Redact("postgres://u:secret@db:5432/baton?sslmode=require"))
	require.Equal(t, "(key=value connection string)", postgresbackend.Redact("host=db password=secret"))
}

// A job's own queue: created on first use with the work queue's
// dead-letter policy, separate from the work queue.
func TestJobQueue(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	_, err := postgresbackend.Setup(t.Context(), dsn, 4)
	require.NoError(t, err)
	b, err := postgresbackend.Open(t.Context(), postgresbackend.Params{DSN: dsn})
	require.NoError(t, err)
	defer b.Close()
	require.NotNil(t, b.JobQueueFunc)
	q, err := b.JobQueueFunc(t.Context(), "noisy")
	require.NoError(t, err)
	pq, ok := q.(*postgres.Queue)
	require.True(t, ok)
	require.Equal(t, postgresbackend.JobQueuePrefix+"noisy", pq.Name())
	dlq, maxReceives, err := pq.DeadLetterPolicy(t.Context())
	require.NoError(t, err)
	require.Equal(t, postgresbackend.DeadLetterQueue, dlq)
	require.Equal(t, 4, maxReceives)
	require.NoError(t, q.SendBatch(t.Context(), []queue.Message{{ID: "1", Body: []byte("x")}}))
	d, err := queue.OpsOf(b.Work).Depth(t.Context())
	require.NoError(t, err)
	require.Zero(t, d.Total(), "the work queue holds none of the job queue's messages")
}
