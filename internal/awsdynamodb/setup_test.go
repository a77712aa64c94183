package awsdynamodb_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
)

func TestCreateTableIdempotent(t *testing.T) {
	t.Parallel()
	c, table := newTable(t)
	require.NoError(t, awsdynamodb.CreateTable(context.Background(), c, table))
	out, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	require.NoError(t, err)
	require.Equal(t, types.TableStatusActive, out.Table.TableStatus)
	require.ElementsMatch(t, []types.KeySchemaElement{
		{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
		{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
	}, out.Table.KeySchema)
}

func TestCreateTableWrongSchema(t *testing.T) {
	t.Parallel()
	c := serverClient(t)
	ctx := context.Background()
	table := fmt.Sprintf("baton-%d-%s", os.Getpid(), uniqueName(t))
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	require.NoError(t, err)
	err = awsdynamodb.CreateTable(ctx, c, table)
	require.ErrorContains(t, err, "does not fit")
}

// Every store names the missing table in an error matching
// ErrTableNotFound.
func TestMissingTable(t *testing.T) {
	t.Parallel()
	c := serverClient(t)
	ctx := context.Background()
	table := "baton-missing-" + uniqueName(t)
	leases := awsdynamodb.NewLeaseStore(c, table, nil)
	ledgers := awsdynamodb.NewLedgerStore(c, table, nil)
	effects := awsdynamodb.NewEffectStore(c, table, nil)
	key := ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: t0, Generation: 1}, Asset: "EURUSD"}
	for name, call := range map[string]func() error{
		"acquire": func() error {
			_, err := leases.Acquire(ctx, lease.AcquireParams{Job: "fx", Owner: "a", TTL: time.Minute, Now: t0})
			return err
		},
		"inspect": func() error { _, err := leases.Inspect(ctx, "fx"); return err },
		"open run": func() error {
			_, _, err := ledgers.OpenRun(ctx, ledger.OpenRunParams{Job: "fx", Nominal: t0, Now: t0})
			return err
		},
		"list runs": func() error { _, err := ledgers.ListRuns(ctx, ledger.ListRunsParams{Job: "fx"}); return err },
		"claim": func() error {
			_, err := ledgers.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "w", Now: t0})
			return err
		},
		"put effect": func() error {
			return effects.Put(ctx, effect.Record{Job: "fx", Key: "k", Generation: 1, Attempt: 1, WrittenAt: t0})
		},
		"get effect": func() error { _, err := effects.Get(ctx, "fx", "k"); return err },
	} {
		err := call()
		require.ErrorIs(t, err, awsdynamodb.ErrTableNotFound, name)
		require.ErrorContains(t, err, table, name)
	}
}
