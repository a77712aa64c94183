package awsdynamodb_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// An item record of an earlier version (no wait_* attributes) reads with
// no wait and no next attempt, and takes a note afterwards; a note left
// at an earlier attempt (an older version's claim and failure since)
// shows none either. The stored note's attributes are the documented
// ones.
func TestItemWaitCompatibility(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	run := openFanned(t, b.ledger, uniqueName(t), 2)
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	put := func(asset string, extra map[string]types.AttributeValue) ledger.ItemKey {
		rec := map[string]types.AttributeValue{
			"pk": s("ITEMS#" + run.ID.String()), "sk": s(asset), "state": s("FAILED"), "owner": s("c1"),
			"attempt": n(2), "error": s("upstream 503"), "created_at": n(1), "updated_at": n(1),
		}
		for k, v := range extra {
			rec[k] = v
		}
		_, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: rec})
		require.NoError(t, err)
		return ledger.ItemKey{Run: run.ID, Asset: asset}
	}
	old := put("OLD", nil)
	stale := put("STALE", map[string]types.AttributeValue{"wait_at": n(t0.Add(time.Hour).UnixNano()), "wait_attempt": n(1), "wait_limit": s("per-host")})

	it, err := b.ledger.GetItem(ctx, old)
	require.NoError(t, err)
	require.Equal(t, ledger.ItemWait{}, it.Wait)
	_, ok := it.NextAttempt()
	require.False(t, ok, "a record without a wait shows no next attempt")
	it, err = b.ledger.GetItem(ctx, stale)
	require.NoError(t, err)
	_, ok = it.NextAttempt()
	require.False(t, ok, "noted at attempt 1, the record is at attempt 2")

	next := t0.Add(2 * time.Hour)
	it, err = b.ledger.NoteWait(ctx, ledger.NoteWaitParams{Key: old, Wait: ledger.ItemWait{At: next, Limit: "per-host", Key: "a/b#c"}, Attempt: 2, Now: t0.Add(time.Minute)})
	require.NoError(t, err)
	w, ok := it.NextAttempt()
	require.True(t, ok)
	require.True(t, next.Equal(w.At))
	require.Equal(t, "upstream 503", it.Error)
	rec := b.raw(t, "ITEMS#"+run.ID.String(), "OLD")
	require.Equal(t, strconv.FormatInt(next.UnixNano(), 10), attrN(rec, "wait_at"))
	require.Equal(t, "2", attrN(rec, "wait_attempt"))
	require.Equal(t, "per-host", attrS(rec, "wait_limit"))
	require.Equal(t, "a/b#c", attrS(rec, "wait_key"))
}
