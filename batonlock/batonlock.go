// Package batonlock is baton's fenced lease as a lock for application
// code: a lock on any key, on the store a deployment already runs (the
// embedded SQLite file, the DynamoDB table, the PostgreSQL database),
// with the guarantees of the coordinators' own lease:
//
//   - acquiring a free or expired lock is one conditional write; an
//     expired holder is taken over in that same write;
//   - every acquisition returns a fence that strictly increases per key,
//     for the caller's own conditional writes ("write only if my fence is
//     the newest you have seen");
//   - a Lock's Context ends, with a cause matching ErrLost, as soon as the
//     lock is lost (a renewal refused, or its expiry passed without one);
//   - release is by the owner only; a forced release refuses a live
//     holder unless told ForceLive;
//   - refused acquisitions are counted per key, durably, and a key refused
//     by the same holder for three TTL cycles in a row is escalated.
//
// Usage:
//
//	locker, err := batonlock.Open(ctx, &batonlock.Options{Store: "var/baton.db"})
//	…
//	lock, err := locker.Acquire(ctx, "entry/alpha/EURUSD") // waits; TryAcquire fails fast
//	…
//	defer lock.Release(context.Background())
//	for lock.Context().Err() == nil { trade(lock.Context(), lock.Fence()) }
//
// Lock records live apart from the jobs' leases (LOCK#<key> on DynamoDB,
// their own tables in SQL): a lock named like a job is not that job's
// lease. They are never deleted, so a key's fence never goes back.
// docs/locks.md is the user's guide; RUNBOOK.md the operator's.
package batonlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/batonhq/baton/internal/backend"
	// The engines a locker opens by default; a binary may link more (see
	// package engines).
	_ "github.com/batonhq/baton/internal/backend/awsbackend"
	_ "github.com/batonhq/baton/internal/backend/postgresbackend"
	_ "github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/lease"
)

// Errors, tested with errors.Is.
var (
	// ErrHeld: the lock has a live holder. Always a *HeldError.
	ErrHeld = errors.New("lock held by another owner")
	// ErrLost: the lock is no longer this Lock's (a renewal came after
	// its expiry, or another owner took it over). A Lock's Context ends
	// with a cause matching it.
	ErrLost = errors.New("lock lost")
	// ErrReleased: the cause of a Lock's Context after its Release.
	ErrReleased = errors.New("lock released")
	// ErrNotOwner: a release by an owner or fence that is not the
	// lock's current one (including a lock already released or taken
	// over).
	ErrNotOwner = errors.New("not the lock's owner")
	// ErrLive: a forced release refused because the holder's lease has
	// not expired (beyond the skew allowance); ForceLive overrides it.
	ErrLive = errors.New("lock holder is live")
	// ErrNotFound: no lock of that key was ever acquired.
	ErrNotFound = errors.New("no such lock")
	// ErrInvalidKey: an empty key, one longer than MaxKeyBytes, or one
	// that is not valid UTF-8 or holds a control character.
	ErrInvalidKey = errors.New("invalid lock key")
	// ErrInvalidTTL: a TTL that is zero or negative.
	ErrInvalidTTL = errors.New("invalid lock TTL")
	// ErrInvalidOptions: options that cannot open a Locker.
	ErrInvalidOptions = errors.New("invalid lock options")
	// ErrUnsupported: the engine cannot do what was asked (List on
	// DynamoDB).
	ErrUnsupported = errors.New("not supported by this engine")
)

// MaxKeyBytes bounds a key's length in bytes.
const MaxKeyBytes = 512

// Defaults of Options.
const (
	DefaultTTL  = 30 * time.Second
	DefaultSkew = time.Second
)

// HeldError is TryAcquire's refusal: the lock's live holder. It matches
// ErrHeld.
type HeldError struct{ Holder Info }

func (e *HeldError) Error() string {
	return fmt.Sprintf("lock %q held by %q until %s (fence %d)", e.Holder.Key, e.Holder.Owner,
		e.Holder.ExpiresAt.UTC().Format(time.RFC3339Nano), e.Holder.Fence)
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Options say where the locks live and how they are held. The engine
// options are those the other entry points take (batonclient, the CLI's
// --backend).
type Options struct {
	// Engine is "sqlite" (the default), "aws" (DynamoDB) or "postgres", or
	// any other engine the binary links (see package engines); or its URL
	// (sqlite:///path/to.db, postgres://…, aws://?table=T); or the path of
	// a SQLite file. An unknown name matches ErrInvalidOptions and lists
	// the linked engines.
	Engine string
	// Store is the SQLite file (sqlite); "" means var/baton.db.
	Store string
	// Table is the DynamoDB table (aws); "" reads BATON_TABLE. Endpoint,
	// optional, overrides DynamoDB's endpoint (a local emulator); the rest
	// comes from the SDK's standard configuration.
	Table, Endpoint string
	// DynamoDB, optional, is the client the aws engine uses instead of
	// one built from the SDK's standard configuration (Endpoint is then
	// ignored): a client with middleware of your own, retries or
	// credentials. Table is still required.
	DynamoDB *dynamodb.Client
	// DSN is the PostgreSQL connection string (postgres); "" reads
	// BATON_PG_DSN. The database must be set up (baton setup).
	DSN string

	// Holder names this process in the locks it takes (host/pid when "").
	// Every acquisition's owner token is Holder#<random>.
	Holder string
	// TTL is how long an acquisition or renewal holds the lock; required:
	// zero or negative is ErrInvalidTTL (DefaultTTL is the ENTRY
	// runbook's 30 s).
	TTL time.Duration
	// Skew is the clock-skew allowance: a holder is live until its expiry
	// plus Skew (DefaultSkew is a good value; 0 allows none). Negative is
	// an error.
	Skew time.Duration
	// Heartbeat is how often a held Lock renews itself; 0 means TTL/3,
	// negative means never (the caller renews with Lock.Renew).
	Heartbeat time.Duration
	// NowFunc is the clock; nil: time.Now.
	NowFunc func() time.Time
	// Logger receives the locker's warnings and forced releases; nil
	// discards them.
	Logger *slog.Logger
	// MetricFunc, optional, is called with every metric the locker emits
	// (LockContention on each refusal, LockEscalated when a refusal finds
	// its key escalated). On Lambda pass batonlock.EMF(os.Stdout).
	MetricFunc func(Metric)
}

// Locker takes and inspects locks. Its methods may be called
// concurrently. Close it when done.
type Locker struct {
	store   lease.Store // counts refusals
	raw     lease.Store
	counter lease.ContentionCounter // nil: the store does not count
	lister  lister                  // nil: the engine cannot list
	holder  string
	ttl     time.Duration
	skew    time.Duration
	beat    time.Duration
	now     func() time.Time
	log     *slog.Logger
	metric  func(Metric)
	close   func() error

	mu         sync.Mutex
	contenders map[string]*lease.Contender

	nowatch bool // tests: no heartbeat nor expiry watch per Lock
}

// lister is the SQL lock stores' List.
type lister interface {
	List(ctx context.Context) ([]lease.Lease, error)
}

// Open opens the locks of the engine o names.
func Open(ctx context.Context, o *Options) (*Locker, error) {
	if o == nil {
		o = &Options{}
	}
	name := o.Engine
	if name == "" {
		name = "sqlite"
	}
	c := backend.Config{Store: o.Store, Table: o.Table, DynamoDBEndpoint: o.Endpoint, DSN: o.DSN}
	if o.DynamoDB != nil {
		c.DynamoDB = o.DynamoDB
	}
	store, close, err := backend.OpenLocks(ctx, name, c)
	var config *backend.ConfigError
	if errors.Is(err, backend.ErrUnknownEngine) || errors.As(err, &config) {
		return nil, fmt.Errorf("batonlock: %w: %w", ErrInvalidOptions, err)
	}
	if err != nil {
		return nil, fmt.Errorf("batonlock: %w", err)
	}
	l, err := newLocker(store, o)
	if err != nil {
		_ = close()
		return nil, err
	}
	l.close = close
	return l, nil
}

// newLocker returns a Locker on store (a lock store of an adapter).
func newLocker(store lease.Store, o *Options) (*Locker, error) {
	l := &Locker{
		raw: store, store: store, holder: o.Holder, ttl: o.TTL, skew: o.Skew, beat: o.Heartbeat,
		now: o.NowFunc, log: o.Logger, metric: o.MetricFunc, close: func() error { return nil },
		contenders: map[string]*lease.Contender{},
	}
	switch {
	case l.ttl <= 0:
		return nil, fmt.Errorf("batonlock: %w: Options.TTL must be positive, got %s", ErrInvalidTTL, l.ttl)
	case l.skew < 0:
		return nil, fmt.Errorf("batonlock: %w: negative skew %s", ErrInvalidOptions, l.skew)
	}
	if l.beat == 0 {
		l.beat = l.ttl / 3
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.holder == "" {
		host, _ := os.Hostname()
		l.holder = fmt.Sprintf("%s/%d", host, os.Getpid())
	}
	if c, ok := store.(lease.ContentionCounter); ok {
		l.counter = c
	}
	if ls, ok := store.(lister); ok {
		l.lister = ls
	}
	return l, nil
}

// Close releases the locker's resources. Locks still held stay held until
// their expiry: release them first.
func (l *Locker) Close() error { return l.close() }

// TTL returns the TTL every acquisition and renewal asks for.
func (l *Locker) TTL() time.Duration { return l.ttl }

// CheckKey reports what is wrong with key, as an error matching
// ErrInvalidKey; nil when it is a valid key: 1 to MaxKeyBytes bytes of
// UTF-8 without control characters. Any other text is a key, '#' and '/'
// included: it is stored whole after the LOCK# prefix or in a column of
// its own, never parsed.
func CheckKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidKey, len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidKey, key)
	}
	for i, r := range key {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%w: %q has a control character at byte %d", ErrInvalidKey, key, i)
		}
	}
	return nil
}

// newOwner returns a fresh owner token: Holder#<16 hex digits>.
func (l *Locker) newOwner() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return l.holder + "#" + hex.EncodeToString(b[:])
}

// TryAcquire takes key's lock if it is free or expired, in one
// conditional write, and fails fast otherwise with a *HeldError (ErrHeld)
// naming the holder. The refusal is counted against key.
func (l *Locker) TryAcquire(ctx context.Context, key string) (*Lock, error) {
	return l.tryAcquire(ctx, key, l.newOwner(), l.now())
}

func (l *Locker) tryAcquire(ctx context.Context, key, owner string, now time.Time) (*Lock, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	got, err := l.store.Acquire(ctx, lease.AcquireParams{Job: key, Owner: owner, TTL: l.ttl, Now: now, Skew: l.skew})
	if err != nil {
		return nil, l.refused(ctx, key, now, err)
	}
	return l.held(ctx, got), nil
}

// refused turns Acquire's error into the package's, counting a refusal.
func (l *Locker) refused(ctx context.Context, key string, now time.Time, err error) error {
	var held *lease.HeldError
	if !errors.As(err, &held) {
		return fmt.Errorf("acquire lock %q: %w", key, err)
	}
	return &HeldError{Holder: l.record(ctx, key, held.Holder, now)}
}

// record counts one refusal of key by holder at now and emits its
// metrics; it returns the holder's Info with the key's contention.
func (l *Locker) record(ctx context.Context, key string, holder lease.Lease, now time.Time) Info {
	info := infoOf(holder, now, l.skew)
	if l.counter != nil {
		if rerr := l.counter.RecordContention(ctx, key, holder, now, l.ttl); rerr != nil {
			l.log.WarnContext(ctx, "lock contention not recorded", slog.String("key", key), slog.Any("error", rerr))
		} else if c, cerr := l.counter.Contention(ctx, key); cerr == nil {
			info.withContention(c, now)
		}
	}
	l.emit(Metric{Name: MetricContention, Key: key, Value: 1, At: now})
	if info.Escalated {
		l.emit(Metric{Name: MetricEscalated, Key: key, Value: 1, At: now})
		l.log.WarnContext(ctx, "lock contention escalated: refused by the same holder for three TTL cycles",
			slog.String("key", key), slog.String("holder", info.Owner), slog.Duration("streak", info.Streak))
	}
	return info
}

// Acquire takes key's lock, waiting while another owner holds it, until
// ctx ends. Between attempts it waits with jittered exponential backoff,
// never past the holder's expiry plus the skew allowance (the lock is free
// then). Each refusal is counted against key. When ctx ends first, the
// error matches ctx's error and, when there was a refusal, ErrHeld.
func (l *Locker) Acquire(ctx context.Context, key string) (*Lock, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	p := lease.AcquireParams{Job: key, Owner: l.newOwner(), TTL: l.ttl, Skew: l.skew}
	got, _, err := l.contender(key).Acquire(ctx, recording{l}, p)
	if err != nil {
		var held *lease.HeldError
		if errors.As(err, &held) {
			var last error = &HeldError{Holder: infoOf(held.Holder, l.now(), l.skew)}
			if cerr := context.Cause(ctx); cerr != nil {
				return nil, fmt.Errorf("acquire lock %q: %w", key, errors.Join(cerr, last))
			}
		}
		return nil, fmt.Errorf("acquire lock %q: %w", key, err)
	}
	return l.held(ctx, got), nil
}

// recording is the locker's store with every refusal recorded, for the
// waits of Acquire.
type recording struct{ l *Locker }

func (r recording) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	got, err := r.l.store.Acquire(ctx, p)
	var held *lease.HeldError
	if errors.As(err, &held) {
		r.l.record(ctx, p.Job, held.Holder, p.Now)
	}
	return got, err
}

func (r recording) Renew(ctx context.Context, p lease.RenewParams) (lease.Lease, error) {
	return r.l.store.Renew(ctx, p)
}

func (r recording) Release(ctx context.Context, p lease.ReleaseParams) error {
	return r.l.store.Release(ctx, p)
}

func (r recording) Inspect(ctx context.Context, key string) (lease.Lease, error) {
	return r.l.store.Inspect(ctx, key)
}

// contender returns the backoff state of key's waits, kept across calls.
func (l *Locker) contender(key string) *lease.Contender {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.contenders[key]
	if !ok {
		if len(l.contenders) > 4096 {
			clear(l.contenders)
		}
		c = &lease.Contender{Backoff: lease.Backoff{NowFunc: l.now}}
		l.contenders[key] = c
	}
	return c
}

// Inspect returns key's lock as stored: holder, owner token, fence, times
// and contention. A key never acquired is ErrNotFound.
func (l *Locker) Inspect(ctx context.Context, key string) (Info, error) {
	if err := CheckKey(key); err != nil {
		return Info{}, err
	}
	got, err := l.raw.Inspect(ctx, key)
	if errors.Is(err, lease.ErrNotFound) {
		return Info{}, fmt.Errorf("inspect lock %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return Info{}, fmt.Errorf("inspect lock %q: %w", key, err)
	}
	now := l.now()
	info := infoOf(got, now, l.skew)
	if l.counter != nil {
		c, err := l.counter.Contention(ctx, key)
		if err != nil {
			return Info{}, fmt.Errorf("inspect lock %q: %w", key, err)
		}
		info.withContention(c, now)
	}
	return info, nil
}

// List returns every lock of the store, by key (SQLite and PostgreSQL;
// on DynamoDB, which has no index of the keys, ErrUnsupported).
func (l *Locker) List(ctx context.Context) ([]Info, error) {
	if l.lister == nil {
		return nil, fmt.Errorf("list locks: %w (inspect a key instead)", ErrUnsupported)
	}
	ls, err := l.lister.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list locks: %w", err)
	}
	now := l.now()
	out := make([]Info, 0, len(ls))
	for _, r := range ls {
		info := infoOf(r, now, l.skew)
		if l.counter != nil {
			c, err := l.counter.Contention(ctx, r.Job)
			if err != nil {
				return nil, fmt.Errorf("list locks: %w", err)
			}
			info.withContention(c, now)
		}
		out = append(out, info)
	}
	return out, nil
}

// ForceRelease says which holder a forced release frees, and whether a
// live one may be.
type ForceRelease struct {
	// Owner and Fence must be the current holder's (Inspect shows them):
	// a lock that changed hands meanwhile is not released (ErrNotOwner).
	Owner string
	Fence int64
	// ForceLive releases a holder whose lease has not expired (plus the
	// skew allowance). Without it such a release is refused (ErrLive):
	// never force-release a live owner, which may still be writing.
	ForceLive bool
	// Reason and By are logged with the release.
	Reason, By string
}

// ForceRelease frees key's lock held by f.Owner with f.Fence, on behalf
// of someone else than its holder (an operator). It refuses a live holder
// (ErrLive) unless f.ForceLive; every release it makes is logged at warn
// level, the forced ones saying so. It returns the record it released.
func (l *Locker) ForceRelease(ctx context.Context, key string, f ForceRelease) (Info, error) {
	if err := CheckKey(key); err != nil {
		return Info{}, err
	}
	if f.Owner == "" {
		return Info{}, fmt.Errorf("release lock %q: %w: no owner given", key, ErrNotOwner)
	}
	cur, err := l.Inspect(ctx, key)
	if err != nil {
		return Info{}, err
	}
	if cur.Owner != f.Owner || cur.Fence != f.Fence {
		return cur, fmt.Errorf("release lock %q: %w: held by %q with fence %d, not %q with fence %d",
			key, ErrNotOwner, cur.Owner, cur.Fence, f.Owner, f.Fence)
	}
	if cur.Held && !f.ForceLive {
		return cur, fmt.Errorf("release lock %q: %w: %q holds it until %s (+%s skew); it may still be writing",
			key, ErrLive, cur.Owner, cur.ExpiresAt.UTC().Format(time.RFC3339Nano), l.skew)
	}
	if err := l.raw.Release(ctx, lease.ReleaseParams{Job: key, Owner: f.Owner, Fence: f.Fence}); err != nil {
		if errors.Is(err, lease.ErrNotHolder) {
			return cur, fmt.Errorf("release lock %q: %w (it changed hands meanwhile)", key, ErrNotOwner)
		}
		return cur, fmt.Errorf("release lock %q: %w", key, err)
	}
	l.log.WarnContext(ctx, "lock force-released", slog.String("key", key), slog.String("owner", f.Owner),
		slog.Int64("fence", f.Fence), slog.Bool("live", cur.Held), slog.Bool("force_live", f.ForceLive),
		slog.String("by", f.By), slog.String("reason", f.Reason))
	return cur, nil
}

// Info is a lock as stored, read at Now.
type Info struct {
	Key string
	// Owner is the holder's owner token (Holder#<random>); Holder its
	// Options.Holder part. Both are empty when the lock is free.
	Owner, Holder string
	// Fence is the fence of the latest acquisition.
	Fence      int64
	AcquiredAt time.Time
	ExpiresAt  time.Time // zero when free
	// Held: the holder is live at Now (its expiry plus the skew allowance
	// is after Now).
	Held bool
	Now  time.Time // when the record was read, by the locker's clock

	// Contention counts the acquisitions of the key ever refused;
	// LastRefusal is the latest of them.
	Contention  int64
	LastRefusal time.Time
	// Streak is how long acquirers have been refused by the same holder;
	// Escalated says it lasted three TTL cycles and still goes on
	// (lease.Contention.Escalated).
	Streak    time.Duration
	Escalated bool
}

func infoOf(r lease.Lease, now time.Time, skew time.Duration) Info {
	i := Info{
		Key: r.Job, Owner: r.Owner, Fence: r.Fence, AcquiredAt: r.AcquiredAt, ExpiresAt: r.ExpiresAt,
		Held: r.Held(now, skew), Now: now,
	}
	if n := strings.LastIndexByte(r.Owner, '#'); n >= 0 {
		i.Holder = r.Owner[:n]
	} else {
		i.Holder = r.Owner
	}
	return i
}

func (i *Info) withContention(c lease.Contention, now time.Time) {
	i.Contention, i.LastRefusal, i.Streak, i.Escalated = c.Count, c.Last, c.Streak(), c.Escalated(now)
}
