package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/batonhq/baton/internal/lease"
)

// dynamoLock reproduces the protocol of cirello.io/dynamolock/v2 (which
// the module proxy here does not serve), on a table of baton's shape
// (pk, sk), for the lock scenario's reference. As dynamolock does:
//
//   - AcquireLock reads the lock's item with a consistent GetItem, then
//     writes it with a conditional PutItem carrying a fresh record version
//     number (RVN): attribute_not_exists when there is no item, the old
//     RVN and isReleased when it was released without being deleted;
//   - a held lock is refused at once with FailIfLocked; otherwise the
//     caller polls (GetItem every RefreshPeriod) and takes the lock over
//     only once it has watched the same RVN for a whole lease duration:
//     the item holds no expiry that another client's clock could read, so
//     a dead holder costs every newcomer a full lease duration;
//   - ReleaseLock deletes the item (its default, DeleteLockOnRelease)
//     with a DeleteItem conditioned on the RVN and the owner.
//
// Its heartbeats (an UpdateItem renewing the RVN every heartbeat period)
// are not reproduced: no lock of the scenario is held long enough for one.
type dynamoLock struct {
	client        *dynamodb.Client
	table         string
	owner         string
	leaseDuration time.Duration
	refreshPeriod time.Duration
}

// errDynamoLockHeld is dynamolock's LockNotGrantedError.
var errDynamoLockHeld = errors.New("dynamolock: lock not granted")

// dynamoLockHeldError is FailIfLocked's refusal, with the item it read.
type dynamoLockHeldError struct{ cur *dynamoLockItem }

func (e *dynamoLockHeldError) Error() string {
	return fmt.Sprintf("dynamolock: lock %s held by %s", e.cur.key, e.cur.owner)
}

func (e *dynamoLockHeldError) Is(target error) bool { return target == errDynamoLockHeld }

// dynamoLockItem is a lock as dynamolock keeps it.
type dynamoLockItem struct {
	key, owner, rvn string
	lease           time.Duration
	released        bool
}

func (d *dynamoLock) itemKey(key string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: "DYNAMOLOCK#" + key},
		"sk": &ddbtypes.AttributeValueMemberS{Value: "LOCK"},
	}
}

func newRVN() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// get is dynamolock's getLockFromDynamoDB: a consistent GetItem.
func (d *dynamoLock) get(ctx context.Context, key string) (*dynamoLockItem, error) {
	out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), Key: d.itemKey(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("dynamolock get %s: %w", key, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	it := &dynamoLockItem{key: key}
	if v, ok := out.Item["ownerName"].(*ddbtypes.AttributeValueMemberS); ok {
		it.owner = v.Value
	}
	if v, ok := out.Item["recordVersionNumber"].(*ddbtypes.AttributeValueMemberS); ok {
		it.rvn = v.Value
	}
	if v, ok := out.Item["leaseDuration"].(*ddbtypes.AttributeValueMemberS); ok {
		it.lease, _ = time.ParseDuration(v.Value)
	}
	_, it.released = out.Item["isReleased"]
	return it, nil
}

// put is dynamolock's upsert: a conditional PutItem with a fresh RVN.
// prev nil: no item may exist; else its RVN must be unchanged.
func (d *dynamoLock) put(ctx context.Context, key string, prev *dynamoLockItem) (*dynamoLockItem, error) {
	it := &dynamoLockItem{key: key, owner: d.owner, rvn: newRVN(), lease: d.leaseDuration}
	item := d.itemKey(key)
	item["ownerName"] = &ddbtypes.AttributeValueMemberS{Value: it.owner}
	item["recordVersionNumber"] = &ddbtypes.AttributeValueMemberS{Value: it.rvn}
	item["leaseDuration"] = &ddbtypes.AttributeValueMemberS{Value: it.lease.String()}
	in := &dynamodb.PutItemInput{TableName: aws.String(d.table), Item: item}
	if prev == nil {
		in.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		in.ConditionExpression = aws.String("attribute_exists(pk) AND recordVersionNumber = :rvn")
		in.ExpressionAttributeValues = map[string]ddbtypes.AttributeValue{":rvn": &ddbtypes.AttributeValueMemberS{Value: prev.rvn}}
	}
	_, err := d.client.PutItem(ctx, in)
	var ccf *ddbtypes.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil, errDynamoLockHeld
	}
	if err != nil {
		return nil, fmt.Errorf("dynamolock put %s: %w", key, err)
	}
	return it, nil
}

// AcquireLock is dynamolock's: failIfLocked refuses a held lock at once;
// otherwise a held lock is taken over after its RVN stayed the same for
// its lease duration, polled every refreshPeriod. It returns the lock and
// the calls it made.
func (d *dynamoLock) AcquireLock(ctx context.Context, key string, failIfLocked bool) (*dynamoLockItem, int, error) {
	calls := 0
	var watched *dynamoLockItem
	var since time.Time
	for {
		cur, err := d.get(ctx, key)
		calls++
		if err != nil {
			return nil, calls, err
		}
		switch {
		case cur == nil:
			it, err := d.put(ctx, key, nil)
			calls++
			if !errors.Is(err, errDynamoLockHeld) {
				return it, calls, err
			}
		case cur.released:
			it, err := d.put(ctx, key, cur)
			calls++
			if !errors.Is(err, errDynamoLockHeld) {
				return it, calls, err
			}
		case failIfLocked:
			return nil, calls, &dynamoLockHeldError{cur: cur}
		case watched == nil || watched.rvn != cur.rvn:
			watched, since = cur, time.Now()
		case time.Since(since) >= cur.lease:
			// The same RVN for a whole lease duration: the holder is
			// taken for dead.
			it, err := d.put(ctx, key, cur)
			calls++
			if !errors.Is(err, errDynamoLockHeld) {
				return it, calls, err
			}
			watched = nil
		}
		if err := sleepFor(ctx, d.refreshPeriod); err != nil {
			return nil, calls, err
		}
	}
}

// ReleaseLock is dynamolock's, deleting the item: a DeleteItem
// conditioned on the RVN and the owner.
func (d *dynamoLock) ReleaseLock(ctx context.Context, it *dynamoLockItem) error {
	_, err := d.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(d.table), Key: d.itemKey(it.key),
		ConditionExpression: aws.String("attribute_exists(pk) AND recordVersionNumber = :rvn AND ownerName = :owner"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":rvn": &ddbtypes.AttributeValueMemberS{Value: it.rvn}, ":owner": &ddbtypes.AttributeValueMemberS{Value: it.owner},
		},
	})
	if err != nil {
		return fmt.Errorf("dynamolock release %s: %w", it.key, err)
	}
	return nil
}

func sleepFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dynamoLockStore is the dynamolock reproduction as a lease.Store with
// AcquireLock's FailIfLocked, so that its callers wait between attempts
// exactly as baton's do (a lease.Contender): only the protocol differs. A
// refusal's holder carries what dynamolock knows: the owner, its RVN as
// the fence (it changes whenever the lock changes hands), and an expiry
// of a lease duration from the refusal (dynamolock cannot know more).
type dynamoLockStore struct {
	d *dynamoLock

	mu   sync.Mutex
	held map[string]*dynamoLockItem // by owner
}

func (s *dynamoLockStore) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	it, _, err := s.d.AcquireLock(ctx, p.Job, true)
	if errors.Is(err, errDynamoLockHeld) {
		// A PutItem that lost the race between the GetItem and it has no
		// item: the fence is then 0, as for an unknown holder.
		h := fnv.New64a()
		var he *dynamoLockHeldError
		if errors.As(err, &he) {
			h.Write([]byte(he.cur.rvn))
		}
		return lease.Lease{}, &lease.HeldError{Holder: lease.Lease{Job: p.Job, Fence: int64(h.Sum64() >> 1), ExpiresAt: p.Now.Add(s.d.leaseDuration)}}
	}
	if err != nil {
		return lease.Lease{}, err
	}
	s.mu.Lock()
	s.held[p.Owner] = it
	s.mu.Unlock()
	return lease.Lease{Job: p.Job, Owner: p.Owner, Fence: 1, ExpiresAt: p.Now.Add(s.d.leaseDuration)}, nil
}

func (s *dynamoLockStore) Release(ctx context.Context, p lease.ReleaseParams) error {
	s.mu.Lock()
	it, ok := s.held[p.Owner]
	delete(s.held, p.Owner)
	s.mu.Unlock()
	if !ok {
		return lease.ErrNotHolder
	}
	return s.d.ReleaseLock(ctx, it)
}

func (s *dynamoLockStore) Renew(context.Context, lease.RenewParams) (lease.Lease, error) {
	return lease.Lease{}, errors.ErrUnsupported
}

func (s *dynamoLockStore) Inspect(context.Context, string) (lease.Lease, error) {
	return lease.Lease{}, errors.ErrUnsupported
}
