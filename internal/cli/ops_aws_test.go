package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/localaws"
)

// newAWSFixture makes a table and a work queue with its dead-letter queue
// on the emulators, and returns a fixture whose commands run with
// --backend aws on them. The caller must have called awsEnv.
func newAWSFixture(t *testing.T) *opsFixture {
	t.Helper()
	ddb, sqsEP := localaws.DynamoDB(t), localaws.SQS(t)
	clients := awsbackend.Clients{DynamoDB: localaws.DynamoDBClient(t), SQS: localaws.SQSClient(t)}
	ctx := context.Background()
	name := fmt.Sprintf("ops-%d", time.Now().UnixNano()%1e12)
	require.NoError(t, awsdynamodb.CreateTable(ctx, clients.DynamoDB, name))
	url, dlqURL, err := awssqs.EnsureQueues(ctx, clients.SQS, name, 5, 30*time.Second)
	require.NoError(t, err)
	b, err := awsbackend.Open(ctx, awsbackend.Params{Clients: clients, Table: name, QueueURL: url})
	require.NoError(t, err)
	require.NotNil(t, b.DeadLetter, "found through the redrive policy")
	flags := []string{"--backend", "aws", "--dynamodb-endpoint", ddb.URL, "--sqs-endpoint", sqsEP.URL,
		"--table", name, "--queue-url", url, "--dlq-url", dlqURL}
	return newFixture(t, b, flags)
}

// TestOperatorCommandsOnAWS runs the checks both backends must pass on
// the DynamoDB and SQS emulators, through --backend aws. Its subtests share
// the process environment (the SDK's configuration chain), so they run
// one after the other, each on its own table and queues.
func TestOperatorCommandsOnAWS(t *testing.T) {
	localaws.DynamoDB(t)
	localaws.SQS(t)
	awsEnv(t)
	for _, tc := range []struct {
		name     string
		bodyFunc func(*testing.T, *opsFixture)
	}{
		{"backfill runs only ticks not done", testBackfillRunsOnlyTicksNotDone},
		{"redrive of a succeeded item does not re-run it", testRedrive},
		{"forced release refused for a live owner", testLeaseReleaseRefusesLiveOwner},
		{"lease show and release of an expired lease", testLeaseReleaseExpired},
		{"cancel", testCancel},
		{"replay item, with --force", testReplayItem},
		{"bounded redrive (receive, send, delete)", testRedriveMax},
		{"status --json matches the ledger", testStatusJSONMatchesLedger},
		{"status finds stuck items past --runs", testStatusFindsStuckItemsPastRuns},
		{"status shows limits and waiting items", testStatusShowsLimitsAndWaitingItems},
		{"pause and resume", testPauseResume},
		{"dlq list predicts what the consumer does", testDLQListPredicts},
		{"dlq purge", testDLQPurge},
		{"status counts superseded items", testStatusCountsSuperseded},
		{"invoke coordinator records contention", testInvokeRecordsContention},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.bodyFunc(t, newAWSFixture(t)) })
	}
}
