package awsdynamodb_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
)

// The benchmarks run against the test server; the reference is one raw
// conditional PutItem on the same server, the floor any conditional write
// pays. Acquire+release is two such writes, claim+complete of a new item
// too.

func BenchmarkAcquireRelease(b *testing.B) {
	c, table := newTable(b)
	s := awsdynamodb.NewLeaseStore(c, table, nil)
	ctx := context.Background()
	job := uniqueName(b)
	for b.Loop() {
		l, err := s.Acquire(ctx, lease.AcquireParams{Job: job, Owner: "bench", TTL: time.Minute, Now: t0})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Release(ctx, lease.ReleaseParams{Job: job, Owner: "bench", Fence: l.Fence}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClaimComplete(b *testing.B) {
	c, table := newTable(b)
	s := awsdynamodb.NewLedgerStore(c, table, nil)
	ctx := context.Background()
	run := ledger.RunID{Job: uniqueName(b), Nominal: t0, Generation: 1}
	result := []byte(`{"close":1.0848}`)
	i := 0
	for b.Loop() {
		i++
		key := ledger.ItemKey{Run: run, Asset: "A" + strconv.Itoa(i)}
		it, err := s.Claim(ctx, ledger.ClaimParams{Key: key, Owner: "bench", LeaseUntil: t0.Add(time.Minute), Fence: 1, MaxAttempts: 3, Now: t0})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Complete(ctx, ledger.CompleteParams{Key: key, Owner: "bench", Attempt: it.Attempt, Result: result, Now: t0}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawConditionalPut(b *testing.B) {
	c, table := newTable(b)
	ctx := context.Background()
	prefix := uniqueName(b)
	i := 0
	for b.Loop() {
		i++
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table),
			Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("RAW#%s#%d", prefix, i)},
				"sk": &types.AttributeValueMemberS{Value: "RAW"},
				"n":  &types.AttributeValueMemberN{Value: "1"},
			},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
