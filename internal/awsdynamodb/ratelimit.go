package awsdynamodb

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/sync/errgroup"

	"github.com/batonhq/baton/internal/ratelimit"
)

// Rate limit counter attributes (pk LIMIT#<name>#<window>#<shard>, sk
// LIMIT).
const (
	prefixLimit = "LIMIT#"
	skLimit     = "LIMIT"
	limitCount  = "count"
)

// limitKey is counter (name, window, shard): a partition of its own, so
// that the shards of a window spread a limit's writes over as many
// partition key values (see package ratelimit's "Hot keys").
func limitKey(name string, window int64, shard int) key {
	return key{prefixLimit + name + "#" + strconv.FormatInt(window, 10) + "#" + strconv.Itoa(shard), skLimit}
}

// RateLimitStore is the ratelimit.Store on a table.
type RateLimitStore struct{ t table }

var _ ratelimit.Store = (*RateLimitStore)(nil)

// NewRateLimitStore returns the rate limit store on table.
func NewRateLimitStore(client API, table string, o *Options) *RateLimitStore {
	return &RateLimitStore{t: newTable(client, table, o)}
}

// Take implements ratelimit.Store with one UpdateItem conditioned on the
// count; the record's TTL is p.Expires.
func (s *RateLimitStore) Take(ctx context.Context, p ratelimit.TakeParams) (int, error) {
	op := fmt.Sprintf("rate limit %s window %d shard %d", p.Name, p.Window, p.Shard)
	if p.Max < 1 || p.Window < 0 || p.Shard < 0 || p.Name == "" {
		return 0, fmt.Errorf("%s: name, max ≥ 1, window and shard ≥ 0 required", op)
	}
	u := update{
		set:    []string{"#" + attrTTL + " = :ttl"},
		add:    []string{"#" + limitCount + " :one"},
		cond:   "attribute_not_exists(#" + limitCount + ") OR #" + limitCount + " < :max",
		values: record{":one": num(1), ":max": num(int64(p.Max)), ":ttl": num(p.Expires.Unix())},
	}
	w, err := s.t.update(ctx, op, limitKey(p.Name, p.Window, p.Shard), u)
	if err != nil {
		return 0, err
	}
	d := decoder{rec: w.rec}
	n := 0
	if w.rec != nil {
		n = d.int(limitCount)
		if d.err != nil {
			return 0, fmt.Errorf("%s: %w", op, d.err)
		}
	}
	if !w.applied {
		return n, fmt.Errorf("%s: %w", op, ratelimit.ErrFull)
	}
	if n == 1 {
		s.note(ctx, p.Name, dirWindow, p.Window, p.Expires)
	}
	return n, nil
}

// Slot attributes of an in-flight limit (pk LIMIT#<name>#SLOT#<slot>, sk
// LIMIT: a window's counter has a number where SLOT is).
const (
	slotHolder = "holder"
	slotUntil  = "until" // unix nanoseconds; 0: free
)

// slotKey is slot (name, slot) of an in-flight limit: a partition of its
// own, so M holders write M partition key values.
func slotKey(name string, slot int) key {
	return key{prefixLimit + name + "#SLOT#" + strconv.Itoa(slot), skLimit}
}

func checkSlot(p ratelimit.SlotParams) error {
	if p.Name == "" || p.Slot < 0 || p.Holder == "" {
		return fmt.Errorf("rate limit %q slot %d: name, holder and slot ≥ 0 required", p.Name, p.Slot)
	}
	return nil
}

// Hold implements ratelimit.Store with one UpdateItem conditioned on the
// slot being absent, free, run out or the holder's. Its TTL is a day
// after Until (garbage collection of a limit no longer used).
func (s *RateLimitStore) Hold(ctx context.Context, p ratelimit.SlotParams) error {
	op := fmt.Sprintf("rate limit %s slot %d: hold", p.Name, p.Slot)
	if err := checkSlot(p); err != nil {
		return err
	}
	u := update{
		set:  []string{"#" + slotHolder + " = :holder", "#" + slotUntil + " = :until", "#" + attrTTL + " = :ttl"},
		cond: "attribute_not_exists(#" + slotUntil + ") OR #" + slotUntil + " <= :now OR #" + slotHolder + " = :holder",
		values: record{":holder": str(p.Holder), ":until": nanos(p.Until), ":now": nanos(p.Now),
			":ttl": num(p.Until.Add(24 * time.Hour).Unix())},
	}
	w, err := s.t.update(ctx, op, slotKey(p.Name, p.Slot), u)
	if err != nil {
		return err
	}
	if !w.applied {
		return fmt.Errorf("%s: %w", op, ratelimit.ErrFull)
	}
	s.note(ctx, p.Name, dirUntil, toNanos(p.Until), p.Until.Add(24*time.Hour))
	return nil
}

// Free implements ratelimit.Store with one UpdateItem conditioned on the
// holder.
func (s *RateLimitStore) Free(ctx context.Context, p ratelimit.SlotParams) error {
	op := fmt.Sprintf("rate limit %s slot %d: free", p.Name, p.Slot)
	if err := checkSlot(p); err != nil {
		return err
	}
	u := update{
		set:    []string{"#" + slotHolder + " = :none", "#" + slotUntil + " = :zero"},
		cond:   "#" + slotHolder + " = :holder",
		values: record{":holder": str(p.Holder), ":none": str(""), ":zero": num(0)},
	}
	w, err := s.t.update(ctx, op, slotKey(p.Name, p.Slot), u)
	if err != nil {
		return err
	}
	if !w.applied {
		return fmt.Errorf("%s: %w", op, ratelimit.ErrNotHolder)
	}
	return nil
}

// The directory of a keyed limit's keys (pk LIMIT#<limit>#KEYS#<bucket>,
// sk <key, query-escaped>; under LIMIT# like the limit's other records,
// and no counter's or slot's pk: those end in two numbers or SLOT#<n>):
// every record of a key has a partition of its own, which no Query finds
// by limit, so a key's first start of a window
// (count 1) and each hold of its slots also note the key here, for
// ListUsage. A note holds the latest window (dirWindow) and the latest
// hold's end (dirUntil) and expires with them (ttl). The keys are spread
// over dirBuckets partitions by their hash, so that a limit's notes (one
// per key and window at most, for a rate limit) never make one hot.
const (
	dirKeys    = "#KEYS#"
	dirBuckets = 16
	dirWindow  = "win"
	dirUntil   = "until"
)

// dirKey is the directory note of record (a keyed limit's record name,
// ratelimit.KeyedName); ok is false for an unkeyed limit's record.
func dirKey(record string) (key, bool) {
	name, esc, ok := strings.Cut(record, "#")
	if !ok {
		return key{}, false
	}
	h := fnv.New32a()
	h.Write([]byte(esc))
	return key{dirPK(name, int(h.Sum32()%dirBuckets)), esc}, true
}

func dirPK(name string, bucket int) string {
	return prefixLimit + name + dirKeys + strconv.Itoa(bucket)
}

// note writes the directory note of record: field raised to v (a window
// index, or a hold's end in unix nanoseconds) unless it holds a later
// one, with TTL ttl. A note is for operators (ListUsage) only: a failed
// note costs the key its place in status until its next one, never a
// start, so its errors are dropped.
func (s *RateLimitStore) note(ctx context.Context, rec, field string, v int64, ttl time.Time) {
	k, ok := dirKey(rec)
	if !ok {
		return
	}
	_, _ = s.t.update(ctx, "rate limit "+rec+": note the key", k, update{
		set:    []string{"#" + field + " = :v", "#" + attrTTL + " = :ttl"},
		cond:   "attribute_not_exists(#" + field + ") OR #" + field + " < :v",
		values: record{":v": num(v), ":ttl": num(ttl.Unix())},
	})
}

var _ ratelimit.Lister = (*RateLimitStore)(nil)

// listUsageReads bounds the reads ListUsage has in flight at once.
const listUsageReads = 16

// ListUsage implements ratelimit.Lister. An unkeyed limit's records are
// read by key (the window's Shards counters, or the InFlight slots). A
// keyed limit's keys are read from its directory, one Query per bucket
// (dirBuckets in all; never a Scan), keeping those noted in the window of
// Now or holding a slot past it; then each such key's records by key.
// Reads are strongly consistent, one GetItem per record, 16 at a time.
func (s *RateLimitStore) ListUsage(ctx context.Context, p ratelimit.ListParams) ([]ratelimit.Usage, error) {
	records := []string{p.Limit.Name}
	if p.Keyed {
		var err error
		if records, err = s.liveKeys(ctx, p); err != nil {
			return nil, err
		}
	}
	g := ratelimit.NewUsages(p)
	var mu sync.Mutex
	w := p.Limit.Window(p.Now)
	// One GetItem per record, listUsageReads at a time.
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(listUsageReads)
	for _, rec := range records {
		if p.Limit.InFlight > 0 {
			for slot := range p.Limit.InFlight {
				eg.Go(func() error {
					r, err := s.t.get(ectx, "rate limit "+rec+": list usage", slotKey(rec, slot))
					if err != nil || r == nil {
						return err
					}
					d := decoder{rec: r}
					holder, until := d.str(slotHolder), d.time(slotUntil)
					if d.err != nil {
						return fmt.Errorf("rate limit %s slot %d: %w", rec, slot, d.err)
					}
					if holder != "" && until.After(p.Now) {
						mu.Lock()
						g.AddHold(rec, ratelimit.Hold{Slot: slot, Holder: holder, Until: until})
						mu.Unlock()
					}
					return nil
				})
			}
			continue
		}
		for shard := range max(p.Limit.Shards, 1) {
			eg.Go(func() error {
				r, err := s.t.get(ectx, "rate limit "+rec+": list usage", limitKey(rec, w, shard))
				if err != nil || r == nil {
					return err
				}
				d := decoder{rec: r}
				n := d.int(limitCount)
				if d.err != nil {
					return fmt.Errorf("rate limit %s window %d shard %d: %w", rec, w, shard, d.err)
				}
				mu.Lock()
				g.AddStarts(rec, n)
				mu.Unlock()
				return nil
			})
		}
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return g.List(), nil
}

// liveKeys returns the record names of p's keys noted in the window of
// p.Now (a rate limit) or holding a slot past it (an in-flight limit).
func (s *RateLimitStore) liveKeys(ctx context.Context, p ratelimit.ListParams) ([]string, error) {
	field, at := dirWindow, p.Limit.Window(p.Now)
	if p.Limit.InFlight > 0 {
		field, at = dirUntil, toNanos(p.Now)
	}
	var out []string
	for b := range dirBuckets {
		recs, err := s.t.query(ctx, "rate limit "+p.Limit.Name+": list keys", &dynamodb.QueryInput{
			TableName:                 aws.String(s.t.name),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			FilterExpression:          aws.String("#f >= :at"),
			ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#f": field},
			ExpressionAttributeValues: record{":pk": str(dirPK(p.Limit.Name, b)), ":at": num(at)},
			ConsistentRead:            aws.Bool(true),
		}, 0)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if esc := strAttr(r, attrSK); esc != "" {
				out = append(out, p.Limit.Name+"#"+esc)
			}
		}
	}
	return out, nil
}
