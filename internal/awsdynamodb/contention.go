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
	contentionStreak      = "streak_at"    // unix nanoseconds: the first refusal of the current streak
	contentionTTL         = "ttl_ns"       // the latest refused caller's TTL, nanoseconds
)

// Compatibility: a contention record written before streaks were kept has
// no streak_at (nor ttl_ns). It reads with a zero StreakStart and TTL
// (never escalated), and its next refusal starts its streak, as a
// refusal by another holder does.

// The lease store counts refused acquisitions per job with one
// unconditional UpdateItem per refusal (ADD count), so counts from every
// coordinator add up. The latest writer sets the "latest refusal"
// attributes. It costs nothing on the uncontended path.
var _ lease.ContentionCounter = (*LeaseStore)(nil)

func contentionKey(job string) key { return key{prefixContention + job, skContention} }

// RecordContention implements lease.ContentionCounter: it adds one
// refusal of job's lease by holder at now. The last one written is kept
// as Last/Holder. It is one UpdateItem conditioned on the record being
// new or naming the same holder, which continues the streak (or starts
// one, for a new record or one without a streak); when the condition
// fails (another holder), one more, unconditional, UpdateItem starts a
// streak at now.
func (s *LeaseStore) RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time, ttl time.Duration) error {
	if job == "" {
		return errors.New("record contention: empty job")
	}
	op := "record contention of " + job
	names := map[string]string{
		"#count": contentionCount, "#last": contentionLast, "#holder": contentionHolder,
		"#fence": contentionHolderFence, "#until": contentionHolderUntil, "#ttl": contentionTTL,
		"#streak": contentionStreak,
	}
	values := record{
		":one": num(1), ":now": nanos(now), ":holder": str(holder.Owner),
		":fence": num(holder.Fence), ":until": nanos(holder.ExpiresAt), ":ttl": num(int64(ttl)),
	}
	const set = "ADD #count :one SET #last = :now, #holder = :holder, #fence = :fence, #until = :until, #ttl = :ttl"
	// One call when the record is new or the refusing holder is the
	// streak's (a record from before streaks starts one now); a second
	// one only when the holder changed, which starts a new streak.
	_, err := s.t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.t.name),
		Key:                       s.keys.contention(job).attrs(),
		UpdateExpression:          aws.String(set + ", #streak = if_not_exists(#streak, :now)"),
		ConditionExpression:       aws.String("attribute_not_exists(#holder) OR #holder = :holder"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if _, failed := conditionFailed(err); failed {
		_, err = s.t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.t.name),
			Key:                       s.keys.contention(job).attrs(),
			UpdateExpression:          aws.String(set + ", #streak = :now"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		})
	}
	if err != nil {
		return translateError(s.t.name, op, err)
	}
	return nil
}

// Contention implements lease.ContentionCounter: job's record (a
// consistent read); Count is 0 when it was never refused.
func (s *LeaseStore) Contention(ctx context.Context, job string) (lease.Contention, error) {
	op := "contention of " + job
	rec, err := s.t.get(ctx, op, s.keys.contention(job))
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
	r.StreakStart = d.time(contentionStreak)
	r.TTL = time.Duration(d.int64(contentionTTL))
	if d.err != nil {
		return lease.Contention{}, fmt.Errorf("%s: %w", op, d.err)
	}
	return r, nil
}
