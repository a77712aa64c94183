package awsbackend_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/dagtest"
	"github.com/batonhq/baton/internal/heartbeattest"
	"github.com/batonhq/baton/internal/jobmodeltest"
	"github.com/batonhq/baton/internal/resumetest"
)

func TestDerivedGraphOnAWS(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	dagtest.Run(t, b)
}

func TestLongItemsOnAWS(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	heartbeattest.Run(t, b)
}

func TestLargeRunSettlesByConsumersOnAWS(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	dagtest.RunLarge(t, b)
}

// The job model end to end on DynamoDB+SQS (the emulators).
func TestJobModelOnAWS(t *testing.T) {
	t.Parallel()
	jobmodeltest.Run(t, func(t *testing.T, jobQueues ...string) backend.Backend {
		c := clients(t)
		res := setUp(t, c, 5)
		urls := map[string]string{}
		for _, name := range jobQueues {
			q, err := awsbackend.Setup(t.Context(), c, awsbackend.SetupParams{Table: res.Table, Queue: uniqueName(name), MaxReceives: 5, Visibility: 10 * time.Second})
			require.NoError(t, err)
			urls[name] = q.QueueURL
		}
		b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL, JobQueueURLs: urls})
		require.NoError(t, err)
		return b
	})
}

func TestResumeAndCatchUpAfterACrashOnAWS(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	resumetest.Run(t, b, "fxresume")
}
