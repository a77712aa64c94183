package awsdynamodb

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/batonhq/baton/internal/ledger"
)

// subsPK is the partition of job's submission index: one record per
// opened generation of a submission, pk RUN#<job>+, sk
// <opened, RFC 3339 UTC>#<dedupe key>, so that ListSubmissions reads the
// newest first with one Query (a submission's run record is kept under
// RUN#<job>+<key>, a partition of its own, which no Query of the job's
// reaches). It is a run-kind key, granted where run records are, that no
// run record has: a run's job+key never has an empty key
// (ledger.ValidTickJob), and ListRuns takes job names only.
func subsPK(job string) string { return prefixRun + job + "+" }

// attrSub holds the dedupe key on a submission index record.
const attrSub = "sub"

// subsKey is the index record of the generation of submission sub of job
// that opened at opened.
func subsKey(job, sub string, opened time.Time) key {
	return key{subsPK(job), timeSK(opened) + "#" + sub}
}

// indexSubmission writes the index record of run, a submission's run
// that OpenRun opened or resumed: an unconditional PutItem of a record
// whose every attribute follows from the run's id and opening time, so
// writing it again (a resumed fan-out) changes nothing, and a crash
// between the run's write and this one is repaired by the resume that
// follows. Its ttl is twice the retention after the opening: it outlives
// its run record's (retention after the finish) unless a run stays open
// longer than the retention; an entry whose run is gone is skipped.
func (s *LedgerStore) indexSubmission(ctx context.Context, op string, run ledger.Run) error {
	k := subsKey(run.ID.Job, run.ID.Submission, run.OpenedAt)
	item := k.attrs()
	item[attrSub] = str(run.ID.Submission)
	if ttl, ok := s.t.expiry(run.OpenedAt.Add(s.t.retention)); ok {
		item[attrTTL] = ttl
	}
	if _, err := s.t.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.t.name), Item: item}); err != nil {
		return translateError(s.t.name, op+": index the submission", err)
	}
	return nil
}

// ListSubmissions implements ledger.SubmissionLister: one Query of the
// job's submission index, newest opening first, and one consistent
// GetItem of the run record per dedupe key listed (the first entry of a
// key is its latest generation's).
func (s *LedgerStore) ListSubmissions(ctx context.Context, p ledger.ListSubmissionsParams) ([]ledger.Run, error) {
	op := "list submissions of " + p.Job
	if err := ledger.ValidName("job", p.Job); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 20
	}
	cond := "#pk = :pk"
	recs, err := s.t.query(ctx, op, &dynamodb.QueryInput{
		TableName:                 aws.String(s.t.name),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  names(cond),
		ExpressionAttributeValues: record{":pk": str(subsPK(p.Job))},
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
	}, 4*limit) // replays add entries of keys already listed
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	runs := make([]ledger.Run, 0, limit)
	for _, rec := range recs {
		if len(runs) == limit {
			break
		}
		k, err := keyOf(rec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		_, sub, ok := strings.Cut(k.sk, "#")
		if !ok || ledger.ValidName("submission", sub) != nil {
			return nil, fmt.Errorf("%s: bad index record %s", op, k)
		}
		if seen[sub] {
			continue
		}
		seen[sub] = true
		rec, err := s.t.get(ctx, op, runKey(ledger.TickOf(ledger.RunID{Job: p.Job, Submission: sub})))
		if err != nil {
			return nil, err
		}
		if rec == nil {
			continue // removed after its retention
		}
		run, err := decodeRun(rec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		runs = append(runs, run)
	}
	return runs, nil
}
