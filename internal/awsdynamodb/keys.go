package awsdynamodb

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/ledger"
)

// Key attributes of the table: every record kind shares one table, told
// apart by the prefix of its partition key.
const (
	attrPK = "pk" // partition key, String
	attrSK = "sk" // sort key, String
)

// Other attributes shared by several record kinds.
const (
	attrToken = "tok" // random token of the latest write, to recognise one's own write
	attrTTL   = "ttl" // epoch seconds; DynamoDB's TTL deletes the record after it (garbage collection only)
)

// Partition key prefixes and the fixed sort keys.
const (
	prefixLease  = "LEASE#"
	prefixRun    = "RUN#"
	prefixItems  = "ITEMS#"
	prefixEffect = "EFFECT#"
	prefixLock   = "LOCK#"
	skLease      = "LEASE"
	skLock       = "LOCK"
	skEffect     = "EFFECT"
)

// key is one record's primary key.
type key struct{ pk, sk string }

func (k key) attrs() record {
	return record{attrPK: str(k.pk), attrSK: str(k.sk)}
}

func (k key) String() string { return k.pk + " " + k.sk }

// leaseKey is the lease record of job: pk LEASE#<job>, sk LEASE.
func leaseKey(job string) key { return key{prefixLease + job, skLease} }

// runKey is the run record of the tick (job, nominal):
// pk RUN#<job>, sk <nominal, RFC 3339 UTC, whole seconds>. Within a job's
// partition the sort keys order by nominal time, which ListRuns relies on.
func runKey(job string, nominal time.Time) key {
	return key{prefixRun + job, timeSK(nominal)}
}

// itemKey is an item record: pk ITEMS#<run id>, sk <asset>. All items of
// one generation share a partition, so ListItems is one Query.
func itemKey(k ledger.ItemKey) key {
	return key{prefixItems + k.Run.String(), k.Asset}
}

// effectKey is an effect record: pk EFFECT#<job>#<key>, sk EFFECT. Every
// effect has a partition of its own, so no job's effects share one. A
// job name holds no '#' (baton.ValidName), so the first '#' after the
// prefix ends it and no two (job, key) pairs share a pk; the prefix is
// no other record kind's. The key is any UTF-8 text without NUL
// (effect.ValidateKey), which DynamoDB takes in a String key.
func effectKey(job, k string) key {
	return key{prefixEffect + job + "#" + k, skEffect}
}

// maxEffectPK bounds an effect record's pk in bytes: the prefix, a job
// name of at most maxNameBytes, '#' and a key of at most
// effect.MaxKeyBytes. DynamoDB bounds a partition key to 2048 bytes; the
// constant below fails to compile when the bound could be exceeded.
const (
	maxNameBytes = 64 // baton.ValidName
	maxEffectPK  = len(prefixEffect) + maxNameBytes + 1 + effect.MaxKeyBytes
	_            = uint(2048 - maxEffectPK)
)

// timeSK is t as a sort key: RFC 3339 in UTC, whole seconds, which sorts
// lexically in time order (years 0000-9999). It is the time form of the
// ledger's run ids.
func timeSK(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// parseTimeSK is the inverse of timeSK.
func parseTimeSK(sk string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, sk)
	if err != nil {
		return time.Time{}, fmt.Errorf("sort key %q is not an RFC 3339 time: %w", sk, err)
	}
	return t.UTC(), nil
}

// beforeSK returns the exclusive upper bound on sort keys for "nominal time
// before t": the sort keys hold whole seconds, so a t with a fraction of a
// second admits the second it falls in.
func beforeSK(t time.Time) string {
	if tr := t.Truncate(time.Second); !tr.Equal(t) {
		t = tr.Add(time.Second)
	}
	return timeSK(t)
}

// keyOf reads the primary key of r.
func keyOf(r record) (key, error) {
	pk, ok1 := r[attrPK].(*types.AttributeValueMemberS)
	sk, ok2 := r[attrSK].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return key{}, fmt.Errorf("record has no string %s/%s key", attrPK, attrSK)
	}
	return key{pk.Value, sk.Value}, nil
}

// trimPrefix returns s without prefix, or an error when s lacks it.
func trimPrefix(s, prefix string) (string, error) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return "", fmt.Errorf("key %q does not start with %q", s, prefix)
	}
	return rest, nil
}
