package awsbackend_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/dagtest"
	"github.com/batonhq/baton/internal/heartbeattest"
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

func TestResumeAndCatchUpAfterACrashOnAWS(t *testing.T) {
	t.Parallel()
	c := clients(t)
	res := setUp(t, c, 5)
	b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL})
	require.NoError(t, err)
	resumetest.Run(t, b, "fxresume")
}
