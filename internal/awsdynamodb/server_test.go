package awsdynamodb_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/localaws"
)

// serverClient returns a client of the test binary's DynamoDB emulator
// (skipping the test when it is not installed, outside CI).
func serverClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	return localaws.DynamoDBClient(t)
}

var seq atomic.Int64

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// uniqueName returns a job, asset or table name no other test uses.
func uniqueName(t testing.TB) string {
	n := unsafeName.ReplaceAllString(t.Name(), "-")
	if len(n) > 40 {
		n = n[len(n)-40:]
	}
	return fmt.Sprintf("t%d-%s", seq.Add(1), n)
}

// newTable creates a fresh table on the test server and returns the client
// and the table's name.
func newTable(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	c := serverClient(t)
	name := fmt.Sprintf("baton-%d-%s", os.Getpid(), uniqueName(t))
	require.NoError(t, awsdynamodb.CreateTable(context.Background(), c, name))
	return c, name
}

// bundle is what a direct test against the server works with.
type bundle struct {
	client  *dynamodb.Client
	table   string
	rec     *recorder // wraps the client the stores use
	leases  *awsdynamodb.LeaseStore
	ledger  *awsdynamodb.LedgerStore
	effects *awsdynamodb.EffectStore
}

// setup returns stores on a fresh table, using o.
func setup(t *testing.T, o *awsdynamodb.Options) *bundle {
	t.Helper()
	c, table := newTable(t)
	r := newRecorder(c)
	return &bundle{
		client:  c,
		table:   table,
		rec:     r,
		leases:  awsdynamodb.NewLeaseStore(r, table, o),
		ledger:  awsdynamodb.NewLedgerStore(r, table, o),
		effects: awsdynamodb.NewEffectStore(r, table, o),
	}
}

// raw reads the record (pk, sk) straight from the table; nil when absent.
func (b *bundle) raw(t *testing.T, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := b.client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(b.table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}},
		ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	if len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

// attrS and attrN read a string and a number attribute of a raw record
// ("" when absent).
func attrS(rec map[string]types.AttributeValue, name string) string {
	if v, ok := rec[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attrN(rec map[string]types.AttributeValue, name string) string {
	if v, ok := rec[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}
