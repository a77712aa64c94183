package bench

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/batonlock"
	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/lab/bench/awscall"
)

// LockConfig sizes the lock scenario (Locks).
type LockConfig struct {
	// Keys are the distinct-key counts: that many workers, one key each,
	// each acquiring and releasing its key in a loop for Window, both
	// sides alternated for Rounds rounds (rates: medians of the rounds).
	Keys   []int
	Window time.Duration
	Rounds int
	// HotContenders want one key, for HotWindow per side and round,
	// HotRounds rounds.
	HotContenders int
	HotWindow     time.Duration
	HotRounds     int
	// FreeAcquisitions is how many acquisitions of free keys, one after
	// the other, count the calls per free acquisition.
	FreeAcquisitions int
	// Lease is the dead holder's lease (baton's TTL, dynamolock's lease
	// duration) in the takeovers, Refresh dynamolock's refresh period
	// while it watches the holder's record version, Takeovers how many
	// takeovers each side makes.
	Lease, Refresh time.Duration
	Takeovers      int
}

// FullLockConfig is what `make bench` runs (a few minutes on both
// engines).
func FullLockConfig() LockConfig {
	return LockConfig{
		Keys: []int{1, 8, 64}, Window: 2 * time.Second, Rounds: 5,
		HotContenders: 64, HotWindow: 3 * time.Second, HotRounds: 5,
		FreeAcquisitions: 50,
		// dynamolock's defaults are a 20 s lease polled every second:
		// the same ratio, shorter.
		Lease: 2 * time.Second, Refresh: 100 * time.Millisecond, Takeovers: 3,
	}
}

// SmokeLockConfig runs every figure at a tiny size, to test the code.
func SmokeLockConfig() LockConfig {
	return LockConfig{
		Keys: []int{1, 4}, Window: 100 * time.Millisecond, Rounds: 1,
		HotContenders: 4, HotWindow: 200 * time.Millisecond, HotRounds: 1,
		FreeAcquisitions: 3, Lease: 300 * time.Millisecond, Refresh: 50 * time.Millisecond, Takeovers: 1,
	}
}

// lockTTL is the TTL of the throughput figures' locks, dynamolock's
// default lease duration: long enough that no heartbeat falls in them.
const lockTTL = 20 * time.Second

// dynamolockLabel names the reference on DynamoDB.
const dynamolockLabel = "dynamolock protocol (reproduced)"

// lockSide is one side of a comparison: a cycle acquires one key and
// releases it.
type lockSide struct {
	name string
	// cycle acquires key for worker w (failing fast when held) and
	// releases it: true when it acquired.
	cycle func(ctx context.Context, w int, key string) (bool, error)
	// wait acquires key for worker w, waiting with jittered backoff while
	// it is held, and releases it at once.
	wait  func(ctx context.Context, w int, key string) error
	calls func() int64 // nil: not counted
}

// Locks is scenario 15: batonlock against the reference lock of the
// target's engine in the same run on the same server, rounds alternated.
// On the DynamoDB emulator the reference is dynamolock's protocol,
// reproduced (dynamoLock): acquisitions/s at each count of distinct keys,
// calls per free acquisition, the takeover of an expired holder, and one
// hot key with HotContenders contenders, each with its goal. On
// PostgreSQL it is a bare pg_try_advisory_lock session lock, as a
// reference without goals (acquisitions/s at each count of keys, and the
// hot key). prefix makes the keys and tables unique per run.
func Locks(ctx context.Context, t Target, prefix string, c LockConfig) ([]Row, error) {
	most := slices.Max(append(slices.Clone(c.Keys), c.HotContenders))
	if t.aws != nil {
		return locksAWS(ctx, t, prefix, c, most)
	}
	env, err := t.OpenFunc(ctx, prefix+"locks")
	if err != nil {
		return nil, err
	}
	defer env.Close()
	if env.Pool == nil {
		return nil, fmt.Errorf("locks on %s: neither DynamoDB nor PostgreSQL", t.Name)
	}
	return locksPostgres(ctx, t, env, prefix, c, most)
}

func openLockers(ctx context.Context, n int, o batonlock.Options) ([]*batonlock.Locker, func(), error) {
	lockers := make([]*batonlock.Locker, 0, n)
	closeAll := func() {
		for _, l := range lockers {
			_ = l.Close()
		}
	}
	for i := range n {
		o := o
		o.Holder = fmt.Sprintf("bench-%d", i)
		l, err := batonlock.Open(ctx, &o)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		lockers = append(lockers, l)
	}
	return lockers, closeAll, nil
}

// batonSide acquires with one Locker per worker (each its own process's).
func batonSide(lockers []*batonlock.Locker, calls func() int64) lockSide {
	return lockSide{
		name: "batonlock",
		cycle: func(ctx context.Context, w int, key string) (bool, error) {
			k, err := lockers[w].TryAcquire(ctx, key)
			if errors.Is(err, batonlock.ErrHeld) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			return true, k.Release(ctx)
		},
		wait: func(ctx context.Context, w int, key string) error {
			k, err := lockers[w].Acquire(ctx, key)
			if err != nil {
				return err
			}
			return k.Release(ctx)
		},
		calls: calls,
	}
}

func locksAWS(ctx context.Context, t Target, prefix string, c LockConfig, most int) ([]Row, error) {
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = idleConns, idleConns
	})
	var batonCalls, dlCalls awscall.Counter
	client := func(counter *awscall.Counter) *dynamodb.Client {
		return dynamodb.NewFromConfig(t.aws.ddb, func(opt *dynamodb.Options) {
			opt.HTTPClient = hc
			if counter != nil {
				opt.APIOptions = append(opt.APIOptions, counter.Middleware())
			}
		})
	}
	plain, bc, dc := client(nil), client(&batonCalls), client(&dlCalls)
	table := "bench-" + prefix + "locks"
	if err := awsdynamodb.CreateTable(ctx, plain, table); err != nil {
		return nil, err
	}
	defer func() {
		_, _ = plain.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: &table})
	}()
	lockers, closeAll, err := openLockers(ctx, most, batonlock.Options{Engine: "aws", Table: table, DynamoDB: bc, TTL: lockTTL})
	if err != nil {
		return nil, err
	}
	defer closeAll()
	dls := make([]*dynamoLock, most)
	stores := make([]*dynamoLockStore, most)
	contenders := make([]lease.Contender, most)
	for i := range dls {
		dls[i] = &dynamoLock{client: dc, table: table, owner: fmt.Sprintf("bench-%d", i), leaseDuration: lockTTL, refreshPeriod: time.Second}
		stores[i] = &dynamoLockStore{d: dls[i], held: map[string]*dynamoLockItem{}}
	}
	baton := batonSide(lockers, func() int64 { return int64(batonCalls.Total()) })
	ref := lockSide{
		name: dynamolockLabel,
		cycle: func(ctx context.Context, w int, key string) (bool, error) {
			it, _, err := dls[w].AcquireLock(ctx, key, true)
			if errors.Is(err, errDynamoLockHeld) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			return true, dls[w].ReleaseLock(ctx, it)
		},
		// The same waits as baton's (a lease.Contender per worker):
		// only the protocol differs.
		wait: func(ctx context.Context, w int, key string) error {
			owner := dls[w].owner
			if _, _, err := contenders[w].Acquire(ctx, stores[w], lease.AcquireParams{Job: key, Owner: owner, TTL: lockTTL}); err != nil {
				return err
			}
			return stores[w].Release(ctx, lease.ReleaseParams{Job: key, Owner: owner})
		},
		calls: func() int64 { return int64(dlCalls.Total()) },
	}
	scenario := func(figure string, v, ref float64, refText string, u Unit) Row {
		return Row{Scenario: "15 locks", Backend: t.Name, Figure: figure, Value: v, Reference: ref, RefText: refText, Unit: u}
	}
	var rows []Row
	keyed, err := lockKeys(ctx, c, prefix, baton, ref)
	if err != nil {
		return nil, err
	}
	for i, n := range c.Keys {
		row := scenario(fmt.Sprintf("acquisitions/s, %s (one worker each: try-acquire, release)", plural(n, "distinct key")),
			keyed[i].value, keyed[i].ref, dynamolockLabel+": AcquireLock with FailIfLocked, ReleaseLock; same workers", Rate)
		row.Goal = RatioAtLeast(2)
		row.Note = keyed[i].note
		rows = append(rows, row)
	}

	// Calls per free acquisition, one after the other, so that the counts
	// are exact: fresh keys, then the same keys again once released.
	var bAcq, bRel, dAcq, dRel int64
	for i := range 2 * c.FreeAcquisitions {
		key := fmt.Sprintf("%sfree-%d", prefix, i%c.FreeAcquisitions)
		before := batonCalls.Total()
		k, err := lockers[0].TryAcquire(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("free acquisition: %w", err)
		}
		mid := batonCalls.Total()
		if err := k.Release(ctx); err != nil {
			return nil, err
		}
		bAcq, bRel = bAcq+int64(mid-before), bRel+int64(batonCalls.Total()-mid)
		before = dlCalls.Total()
		it, _, err := dls[0].AcquireLock(ctx, key, true)
		if err != nil {
			return nil, fmt.Errorf("dynamolock free acquisition: %w", err)
		}
		mid = dlCalls.Total()
		if err := dls[0].ReleaseLock(ctx, it); err != nil {
			return nil, err
		}
		dAcq, dRel = dAcq+int64(mid-before), dRel+int64(dlCalls.Total()-mid)
	}
	n := float64(2 * c.FreeAcquisitions)
	free := scenario("calls per free acquisition (new and released keys)", float64(bAcq)/n, float64(dAcq)/n,
		dynamolockLabel+": consistent GetItem + conditional PutItem", Count)
	free.Goal = AtMost(1, Count)
	free.Note = fmt.Sprintf("release: %.2g call (baton), %.2g (dynamolock: a conditional DeleteItem)", float64(bRel)/n, float64(dRel)/n)
	rows = append(rows, free)

	// The takeover of a dead holder whose lease has expired: the holder
	// acquires and is never heard of again; the newcomer asks once the
	// holder's lease (plus baton's skew allowance) is over.
	var bTimes, dTimes Samples
	var bTake, dTake int64
	short, closeShort, err := openLockers(ctx, 2, batonlock.Options{Engine: "aws", Table: table, DynamoDB: bc, TTL: c.Lease, Heartbeat: -1})
	if err != nil {
		return nil, err
	}
	defer closeShort()
	for i := range c.Takeovers {
		key := fmt.Sprintf("%stakeover-%d", prefix, i)
		if _, err := short[0].TryAcquire(ctx, key); err != nil {
			return nil, fmt.Errorf("dead holder: %w", err)
		}
		if err := sleepFor(ctx, c.Lease+batonlock.DefaultSkew); err != nil {
			return nil, err
		}
		before, start := batonCalls.Total(), time.Now()
		k, err := short[1].TryAcquire(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("takeover: %w", err)
		}
		bTimes.Add(time.Since(start))
		bTake += int64(batonCalls.Total() - before)
		_ = k.Release(ctx)

		holder := &dynamoLock{client: dc, table: table, owner: "dead", leaseDuration: c.Lease, refreshPeriod: c.Refresh}
		newcomer := &dynamoLock{client: dc, table: table, owner: "newcomer", leaseDuration: c.Lease, refreshPeriod: c.Refresh}
		if _, _, err := holder.AcquireLock(ctx, key, true); err != nil {
			return nil, fmt.Errorf("dynamolock dead holder: %w", err)
		}
		if err := sleepFor(ctx, c.Lease+batonlock.DefaultSkew); err != nil {
			return nil, err
		}
		start = time.Now()
		it, calls, err := newcomer.AcquireLock(ctx, key, false)
		if err != nil {
			return nil, fmt.Errorf("dynamolock takeover: %w", err)
		}
		dTimes.Add(time.Since(start))
		dTake += int64(calls)
		_ = newcomer.ReleaseLock(ctx, it)
	}
	m := float64(c.Takeovers)
	takeText := fmt.Sprintf("%s: AcquireLock, watching the record version for a lease duration (%s, polled every %s)", dynamolockLabel, c.Lease, c.Refresh)
	tc := scenario(fmt.Sprintf("takeover of an expired holder (lease %s, expired when asked): calls", c.Lease), float64(bTake)/m, float64(dTake)/m, takeText, Count)
	tc.Goal = AtMost(1, Count)
	tt := scenario(fmt.Sprintf("takeover of an expired holder (lease %s, expired when asked): time, p50 of %d", c.Lease, c.Takeovers), bTimes.Percentile(50), dTimes.Percentile(50), takeText, Duration)
	tt.Note = "a newcomer that asks as the holder dies waits out the lease on both sides; one that asks later waits nothing on baton, a whole lease duration more on dynamolock"
	rows = append(rows, tc, tt)

	hot, err := lockHot(ctx, c, prefix, baton, ref)
	if err != nil {
		return nil, err
	}
	hr := scenario(fmt.Sprintf("acquisitions/s, one hot key, %d contenders (acquire waiting with jittered backoff, release at once)", c.HotContenders),
		hot.value, hot.ref, dynamolockLabel+" with FailIfLocked, retried with the same waits (a lease.Contender per contender)", Rate)
	hr.Goal = RatioAtLeast(1)
	hr.Note = hot.note
	rows = append(rows, hr)
	return rows, nil
}

func locksPostgres(ctx context.Context, t Target, env *Env, prefix string, c LockConfig, most int) ([]Row, error) {
	lockers, closeAll, err := openLockers(ctx, most, batonlock.Options{Engine: "postgres", DSN: env.DSN, TTL: lockTTL})
	if err != nil {
		return nil, err
	}
	defer closeAll()
	baton := batonSide(lockers, nil)
	stores := make([]*advisoryStore, most)
	contenders := make([]lease.Contender, most)
	for i := range stores {
		stores[i] = &advisoryStore{pool: env.Pool}
	}
	defer func() {
		for _, s := range stores {
			s.close()
		}
	}()
	ref := lockSide{
		name: "pg_try_advisory_lock",
		cycle: func(ctx context.Context, w int, key string) (bool, error) {
			_, err := stores[w].Acquire(ctx, lease.AcquireParams{Job: key})
			if errors.Is(err, lease.ErrHeld) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			return true, stores[w].Release(ctx, lease.ReleaseParams{Job: key})
		},
		wait: func(ctx context.Context, w int, key string) error {
			if _, _, err := contenders[w].Acquire(ctx, stores[w], lease.AcquireParams{Job: key, TTL: lockTTL}); err != nil {
				return err
			}
			return stores[w].Release(ctx, lease.ReleaseParams{Job: key})
		},
	}
	refText := "bare pg_try_advisory_lock session lock and pg_advisory_unlock on a connection of the worker's own"
	scenario := func(figure string, v, ref float64, note string) Row {
		return Row{Scenario: "15 locks", Backend: t.Name, Figure: figure, Value: v, Reference: ref, RefText: refText, Unit: Rate, Note: note}
	}
	var rows []Row
	keyed, err := lockKeys(ctx, c, prefix, baton, ref)
	if err != nil {
		return nil, err
	}
	for i, n := range c.Keys {
		rows = append(rows, scenario(fmt.Sprintf("acquisitions/s, %s (one worker each: try-acquire, release)", plural(n, "distinct key")),
			keyed[i].value, keyed[i].ref, keyed[i].note))
	}
	hot, err := lockHot(ctx, c, prefix, baton, ref)
	if err != nil {
		return nil, err
	}
	rows = append(rows, scenario(fmt.Sprintf("acquisitions/s, one hot key, %d contenders (acquire waiting with jittered backoff, release at once)", c.HotContenders),
		hot.value, hot.ref, hot.note+"; the reference retried with the same waits"))
	return rows, nil
}

// advisoryStore is a bare PostgreSQL session lock as a lease.Store: one
// connection of its own, held from pg_try_advisory_lock to
// pg_advisory_unlock. One caller at a time.
type advisoryStore struct {
	pool *pgxpool.Pool
	conn *pgxpool.Conn
}

func advisoryKey(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int64(h.Sum64())
}

func (s *advisoryStore) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	if s.conn == nil {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return lease.Lease{}, err
		}
		s.conn = c
	}
	var ok bool
	if err := s.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", advisoryKey(p.Job)).Scan(&ok); err != nil {
		s.close() // a query cut short by ctx closes its connection, and the session's locks with it
		return lease.Lease{}, fmt.Errorf("pg_try_advisory_lock: %w", err)
	}
	if !ok {
		return lease.Lease{}, &lease.HeldError{Holder: lease.Lease{Job: p.Job}}
	}
	return lease.Lease{Job: p.Job, Owner: p.Owner}, nil
}

func (s *advisoryStore) Release(ctx context.Context, p lease.ReleaseParams) error {
	if s.conn == nil {
		return lease.ErrNotHolder
	}
	var ok bool
	if err := s.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", advisoryKey(p.Job)).Scan(&ok); err != nil {
		s.close()
		return fmt.Errorf("pg_advisory_unlock: %w", err)
	}
	if !ok {
		return lease.ErrNotHolder
	}
	return nil
}

func (s *advisoryStore) close() {
	if s.conn != nil {
		s.conn.Release()
		s.conn = nil
	}
}

func (s *advisoryStore) Renew(context.Context, lease.RenewParams) (lease.Lease, error) {
	return lease.Lease{}, errors.ErrUnsupported
}

func (s *advisoryStore) Inspect(context.Context, string) (lease.Lease, error) {
	return lease.Lease{}, errors.ErrUnsupported
}

// lockFigure is one compared figure: baton's value, the reference's, and
// what the note says of them.
type lockFigure struct {
	value, ref float64
	note       string
}

// lockKeys measures both sides at each count of distinct keys, rounds
// alternated (every other round in the reverse order).
func lockKeys(ctx context.Context, c LockConfig, prefix string, sides ...lockSide) ([]lockFigure, error) {
	out := make([]lockFigure, len(c.Keys))
	for i, n := range c.Keys {
		rates := make([][]float64, len(sides))
		acquired, calls := make([]int64, len(sides)), make([]int64, len(sides))
		order := []int{0, 1}
		for round := range c.Rounds {
			slices.Reverse(order)
			for _, s := range order {
				side := sides[s]
				var won atomic.Int64
				var before int64
				if side.calls != nil {
					before = side.calls()
				}
				l, err := RunWorkers(ctx, n, c.Window, func(ctx context.Context, w int) (int, error) {
					key := fmt.Sprintf("%skeys-%d-%d", prefix, n, w)
					got, err := side.cycle(ctx, w, key)
					if got {
						won.Add(1)
					}
					return 1, err
				})
				if err != nil {
					return nil, fmt.Errorf("%s, %d keys, round %d: %w", side.name, n, round+1, err)
				}
				rates[s] = append(rates[s], float64(won.Load())/l.Elapsed.Seconds())
				acquired[s] += won.Load()
				if side.calls != nil {
					calls[s] += side.calls() - before
				}
			}
		}
		out[i] = lockFigure{value: median(rates[0]), ref: median(rates[1]), note: fmt.Sprintf("medians of %d alternated rounds", c.Rounds)}
		if sides[0].calls != nil && sides[1].calls != nil {
			out[i].note += fmt.Sprintf("; calls per acquire + release: %.2f baton, %.2f reference",
				float64(calls[0])/float64(max(acquired[0], 1)), float64(calls[1])/float64(max(acquired[1], 1)))
		}
	}
	return out, nil
}

// lockHot measures both sides with HotContenders contenders on one key
// each round (a key of its own per round and side, so that no contender
// starts with a backoff another round left), rounds alternated.
func lockHot(ctx context.Context, c LockConfig, prefix string, sides ...lockSide) (lockFigure, error) {
	rates := make([][]float64, len(sides))
	acquired, calls := make([]int64, len(sides)), make([]int64, len(sides))
	order := []int{0, 1}
	for round := range c.HotRounds {
		slices.Reverse(order)
		for _, s := range order {
			side := sides[s]
			key := fmt.Sprintf("%shot-%d-%d", prefix, round, s)
			var won atomic.Int64
			var before int64
			if side.calls != nil {
				before = side.calls()
			}
			wctx, cancel := context.WithTimeout(ctx, c.HotWindow)
			start := time.Now()
			_, err := RunWorkers(wctx, c.HotContenders, c.HotWindow, func(ctx context.Context, w int) (int, error) {
				err := side.wait(ctx, w, key)
				if err == nil {
					won.Add(1)
				}
				if ctx.Err() != nil {
					return 0, nil // the window ended during a wait
				}
				return 1, err
			})
			elapsed := time.Since(start)
			cancel()
			if err != nil && ctx.Err() == nil {
				return lockFigure{}, fmt.Errorf("%s, hot key, round %d: %w", side.name, round+1, err)
			}
			rates[s] = append(rates[s], float64(won.Load())/elapsed.Seconds())
			acquired[s] += won.Load()
			if side.calls != nil {
				calls[s] += side.calls() - before
			}
		}
	}
	f := lockFigure{value: median(rates[0]), ref: median(rates[1]), note: fmt.Sprintf("medians of %d alternated rounds", c.HotRounds)}
	if sides[0].calls != nil && sides[1].calls != nil {
		f.note += fmt.Sprintf("; calls per acquisition (refusals, their contention records and the release included): %.1f baton, %.1f reference",
			float64(calls[0])/float64(max(acquired[0], 1)), float64(calls[1])/float64(max(acquired[1], 1)))
	}
	return f, nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
