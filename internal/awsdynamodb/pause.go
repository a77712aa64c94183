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

// Pause record (pk PAUSE#<job>, sk PAUSE): the job's pause flag
// (lease.Pauser), read by every coordinator invocation before it takes
// the job's lease.
const (
	prefixPause = "PAUSE#"
	skPause     = "PAUSE"

	pausePaused      = "paused" // Number: 1 paused, 0 resumed
	pauseSince       = "since"  // unix nanoseconds
	pauseUntil       = "until"  // unix nanoseconds, 0 while paused
	pauseBy          = "by"
	pauseReason      = "reason"
	pauseSkipped     = "skipped"
	pauseLastSkipped = "last_skipped" // unix nanoseconds, 0: none
)

var _ lease.Pauser = (*LeaseStore)(nil)

func pauseKey(job string) key { return key{prefixPause + job, skPause} }

// SetPause implements lease.Pauser with one conditional UpdateItem: a
// pause writes when the job is not paused, a resume when it is; a failed
// condition means there is nothing to change.
func (s *LeaseStore) SetPause(ctx context.Context, p lease.SetPauseParams) (lease.Pause, error) {
	if p.Job == "" {
		return lease.Pause{}, errors.New("set pause: empty job")
	}
	op := "set pause of " + p.Job
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(s.t.name),
		Key:       pauseKey(p.Job).attrs(),
		ExpressionAttributeNames: map[string]string{
			"#paused": pausePaused, "#since": pauseSince, "#until": pauseUntil, "#by": pauseBy,
			"#reason": pauseReason, "#skipped": pauseSkipped, "#last": pauseLastSkipped,
		},
	}
	if p.Paused {
		in.UpdateExpression = aws.String("SET #paused = :one, #since = :now, #until = :zero, #by = :by, #reason = :reason, #skipped = :zero, #last = :zero")
		in.ConditionExpression = aws.String("attribute_not_exists(#paused) OR #paused = :zero")
	} else {
		in.UpdateExpression = aws.String("SET #paused = :zero, #until = :now, #by = :by, #reason = :reason")
		in.ConditionExpression = aws.String("#paused = :one")
		delete(in.ExpressionAttributeNames, "#since")
		delete(in.ExpressionAttributeNames, "#skipped")
		delete(in.ExpressionAttributeNames, "#last")
	}
	in.ExpressionAttributeValues = record{":one": num(1), ":zero": num(0), ":now": nanos(p.Now), ":by": str(p.By), ":reason": str(p.Reason)}
	if _, err := s.t.client.UpdateItem(ctx, in); err != nil {
		if _, failed := conditionFailed(err); !failed {
			return lease.Pause{}, translateError(s.t.name, op, err)
		}
	}
	return s.PauseOf(ctx, p.Job)
}

// PauseOf implements lease.Pauser: job's record (a consistent read).
func (s *LeaseStore) PauseOf(ctx context.Context, job string) (lease.Pause, error) {
	op := "pause of " + job
	rec, err := s.t.get(ctx, op, pauseKey(job))
	if err != nil {
		return lease.Pause{}, err
	}
	r := lease.Pause{Job: job}
	if rec == nil {
		return r, nil
	}
	d := decoder{rec: rec}
	r.Paused = d.int64(pausePaused) == 1
	r.Since, r.Until = d.time(pauseSince), d.time(pauseUntil)
	r.By, r.Reason = d.str(pauseBy), d.str(pauseReason)
	r.Skipped, r.LastSkipped = d.int64(pauseSkipped), d.time(pauseLastSkipped)
	if d.err != nil {
		return lease.Pause{}, fmt.Errorf("%s: %w", op, d.err)
	}
	return r, nil
}

// RecordSkipped implements lease.Pauser with one conditional UpdateItem:
// it counts the tick when the job is paused and the tick is newer than the
// last one counted.
func (s *LeaseStore) RecordSkipped(ctx context.Context, job string, nominal time.Time) (lease.Pause, error) {
	if job == "" {
		return lease.Pause{}, errors.New("record skipped: empty job")
	}
	op := "record skipped tick of " + job
	_, err := s.t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.t.name),
		Key:                      pauseKey(job).attrs(),
		UpdateExpression:         aws.String("ADD #skipped :one SET #last = :nominal"),
		ConditionExpression:      aws.String("#paused = :one AND #last < :nominal"),
		ExpressionAttributeNames: map[string]string{"#paused": pausePaused, "#skipped": pauseSkipped, "#last": pauseLastSkipped},
		ExpressionAttributeValues: record{
			":one": num(1), ":nominal": nanos(nominal),
		},
	})
	if err != nil {
		if _, failed := conditionFailed(err); !failed {
			return lease.Pause{}, translateError(s.t.name, op, err)
		}
	}
	r, err := s.PauseOf(ctx, job)
	if err != nil {
		return r, err
	}
	if !r.Paused {
		return r, fmt.Errorf("%s: %w", op, lease.ErrNotPaused)
	}
	return r, nil
}
