package awsdynamodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/batonhq/baton/internal/ledger"
)

// Settle mark attributes (pk ITEMS#<run id>#MARKS#<level>#<group>,
// sk <index, ten digits>).
const (
	markSucceeded = "succeeded"
	markDead      = "dead"
	markCancelled = "cancelled"
	markAt        = "at"
)

// markKey is the settle mark (run, level, index): its group's partition,
// pk ITEMS#<run id>#MARKS#<level>#<group>, and sk the index in ten digits,
// so that a group is one Query in index order. A partition holds at most
// ledger.MarkGroup marks, each written once, so none takes writes that
// grow with the run. The pk starts with the run's item prefix (the roles
// that write a run's items write its marks) and is no item partition's:
// a run id never holds "#MARKS#".
func markKey(run ledger.RunID, level, index int) key {
	return key{markPK(run, level, index/ledger.MarkGroup), fmt.Sprintf("%010d", index)}
}

func markPK(run ledger.RunID, level, group int) string {
	return prefixItems + run.String() + "#MARKS#" + strconv.Itoa(level) + "#" + strconv.Itoa(group)
}

// ListItemRange implements ledger.Store with one consistent Query of the
// run's partition (of first's, for a run spread over partitions) bounded
// on the sort key (asset): it reads the range's records only.
func (s *LedgerStore) ListItemRange(ctx context.Context, run ledger.RunID, first, last string) ([]ledger.Item, error) {
	op := fmt.Sprintf("list items of %s from %q to %q", run, first, last)
	if err := validRunID(run); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if first > last || last == "" {
		return nil, nil
	}
	pk, err := s.itemPKOf(ctx, run, first)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, nil // first is on no page of a run partitioned by page: no record
	}
	if err != nil {
		return nil, err
	}
	return s.listPartition(ctx, op, run, pk, first, last)
}

// MarkDone implements ledger.Store with one PutItem conditioned on no
// record; a refusal returns the record that refused it.
func (s *LedgerStore) MarkDone(ctx context.Context, p ledger.MarkParams) (ledger.Mark, error) {
	op := fmt.Sprintf("mark %s level %d index %d", p.Run, p.Level, p.Index)
	if err := validRunID(p.Run); err != nil {
		return ledger.Mark{}, fmt.Errorf("%s: %w", op, err)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"level", p.Level}, {"index", p.Index}, {"succeeded", p.Succeeded}, {"dead", p.Dead}, {"cancelled", p.Cancelled}} {
		if f.v < 0 {
			return ledger.Mark{}, fmt.Errorf("%s: %s %d is negative", op, f.name, f.v)
		}
	}
	rec := record{
		markSucceeded: num(int64(p.Succeeded)),
		markDead:      num(int64(p.Dead)),
		markCancelled: num(int64(p.Cancelled)),
		markAt:        nanos(p.Now),
	}
	if ttl, ok := s.t.expiry(p.Now); ok {
		rec[attrTTL] = ttl
	}
	w, err := s.t.put(ctx, op, markKey(p.Run, p.Level, p.Index), rec, "attribute_not_exists(#pk)", nil)
	if err != nil {
		return ledger.Mark{}, err
	}
	if w.rec == nil {
		return ledger.Mark{}, fmt.Errorf("%s: refused, and no record to say why", op)
	}
	m, err := decodeMark(p.Run, p.Level, w.rec)
	if err != nil {
		return ledger.Mark{}, fmt.Errorf("%s: %w", op, err)
	}
	if !w.applied {
		return m, fmt.Errorf("%s: written already: %w", op, ledger.ErrTerminal)
	}
	return m, nil
}

// ListMarks implements ledger.Store with one consistent Query of the
// group's partition.
func (s *LedgerStore) ListMarks(ctx context.Context, run ledger.RunID, level, group int) ([]ledger.Mark, error) {
	op := fmt.Sprintf("list marks of %s level %d group %d", run, level, group)
	if err := validRunID(run); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if level < 0 || group < 0 {
		return nil, fmt.Errorf("%s: level and group must not be negative", op)
	}
	cond := "#pk = :pk"
	recs, err := s.t.query(ctx, op, &dynamodb.QueryInput{
		TableName:                 aws.String(s.t.name),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  names(cond),
		ExpressionAttributeValues: record{":pk": str(markPK(run, level, group))},
		ConsistentRead:            aws.Bool(true),
	}, 0)
	if err != nil {
		return nil, err
	}
	marks := make([]ledger.Mark, 0, len(recs))
	for _, rec := range recs {
		m, err := decodeMark(run, level, rec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		marks = append(marks, m)
	}
	return marks, nil
}

// decodeMark reads a settle mark of run at level; its index is its sort
// key.
func decodeMark(run ledger.RunID, level int, rec record) (ledger.Mark, error) {
	k, err := keyOf(rec)
	if err != nil {
		return ledger.Mark{}, fmt.Errorf("decode mark record: %w", err)
	}
	index, err := strconv.Atoi(k.sk)
	if err != nil || index < 0 {
		return ledger.Mark{}, fmt.Errorf("decode mark record %s: sort key is not an index", k)
	}
	d := decoder{rec: rec}
	m := ledger.Mark{
		Run: run, Level: level, Index: index,
		Succeeded: d.int(markSucceeded),
		Dead:      d.int(markDead),
		Cancelled: d.int(markCancelled),
		At:        d.time(markAt),
	}
	if d.err != nil {
		return ledger.Mark{}, fmt.Errorf("decode mark record %s: %w", k, d.err)
	}
	return m, nil
}
