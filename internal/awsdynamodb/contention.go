package awsdynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/batonhq/baton/internal/lease"
)

// Contention record (pk CONTENTION#<job>, sk CONTENTION): how many lease
// acquisitions of the job were refused, and the latest refusal. It is for
// operators only (baton status); nothing decides on it.
const (
	prefixContention = "CONTENTION#"
	skContention     = "CONTENTION"

	contentionCount       = "count"
	contentionLast        = "last_at" // unix nanoseconds, by the refused caller's clock
	contentionHolder      = "holder"
	contentionHolderFence = "holder_fence"
	contentionHolderUntil = "holder_until" // unix nanoseconds
)

// The lease store counts refused acquisitions per job with one
// unconditional UpdateItem per refusal (ADD count), so counts from every
// coordinator add up. The latest writer sets the "latest refusal"
// attributes. It costs nothing on the uncontended path.
var _ lease.ContentionCounter = (*LeaseStore)(nil)

func contentionKey(job string) key { return key{prefixContention + job, skContention} }

// RecordContention implements lease.ContentionCounter: it adds one
// refusal of job's lease by holder at now. The last one written is kept
// as Last/Holder.
func (s *LeaseStore) RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time) error {
	if job == "" {
		return errors.New("record contention: empty job")
	}
	op := "record contention of " + job
	_, err := s.t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.t.name),
		Key:              contentionKey(job).attrs(),
		UpdateExpression: aws.String("ADD #count :one SET #last = :now, #holder = :holder, #fence = :fence, #until = :until"),
		ExpressionAttributeNames: map[string]string{
			"#count": contentionCount, "#last": contentionLast, "#holder": contentionHolder,
			"#fence": contentionHolderFence, "#until": contentionHolderUntil,
		},
		ExpressionAttributeValues: record{
			":one": num(1), ":now": nanos(now), ":holder": str(holder.Owner),
			":fence": num(holder.Fence), ":until": nanos(holder.ExpiresAt),
		},
	})
	if err != nil {
		return translateError(s.t.name, op, err)
	}
	return nil
}

// Contention implements lease.ContentionCounter: job's record (a
// consistent read); Count is 0 when it was never refused.
func (s *LeaseStore) Contention(ctx context.Context, job string) (lease.Contention, error) {
	op := "contention of " + job
	rec, err := s.t.get(ctx, op, contentionKey(job))
	if err != nil {
		return lease.Contention{}, err
	}
	r := lease.Contention{Job: job, Holder: lease.Lease{Job: job}}
	if rec == nil {
		return r, nil
	}
	d := decoder{rec: rec}
	r.Count = d.int64(contentionCount)
	r.Last = d.time(contentionLast)
	r.Holder.Owner = d.str(contentionHolder)
	r.Holder.Fence = d.int64(contentionHolderFence)
	r.Holder.ExpiresAt = d.time(contentionHolderUntil)
	if d.err != nil {
		return lease.Contention{}, fmt.Errorf("%s: %w", op, d.err)
	}
	return r, nil
}
