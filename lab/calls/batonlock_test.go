package calls

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/batonlock"
	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/lab/bench/awscall"
)

// TestBatonlockOpenWithDynamoDBClient opens batonlock's aws engine on a
// client of the caller's (here one with a call counter, on the emulator):
// every call goes through it, and a free acquisition is one call.
func TestBatonlockOpenWithDynamoDBClient(t *testing.T) {
	t.Parallel()
	var calls awscall.Counter
	c := localaws.DynamoDBClient(t, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, calls.Middleware()) })
	table := uniqueName("batonlock-client")
	require.NoError(t, awsdynamodb.CreateTable(t.Context(), c, table))
	calls.Reset()
	l, err := batonlock.Open(t.Context(), &batonlock.Options{Engine: "aws", Table: table, DynamoDB: c, TTL: time.Minute, Heartbeat: -1})
	require.NoError(t, err)
	defer l.Close()
	k, err := l.TryAcquire(t.Context(), "entry/alpha/EURUSD")
	require.NoError(t, err)
	require.Equal(t, 1, calls.Total(), "one conditional write, through the client given")
	require.NoError(t, k.Release(t.Context()))
	require.Equal(t, 2, calls.Total())
}
