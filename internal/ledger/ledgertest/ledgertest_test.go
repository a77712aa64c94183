package ledgertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/suitecheck"
)

func TestRunMemStore(t *testing.T) {
	Run(t, Harness{NewStore: func(*testing.T) ledger.Store { return newMemStore() }})
}

// TestSuiteFindsBrokenStores requires the suite's cases to fail against
// stores broken on purpose (see internal/suitecheck).
func TestSuiteFindsBrokenStores(t *testing.T) {
	suitecheck.RequireCaught(t, "TestBrokenStore", map[string][]string{
		"mark overwritten":        {"MarkDone"},
		"range past last":         {"ListItemRange"},
		"marks of every group":    {"ListMarks"},
		"resume takes shards":     {"Shards"},
		"force keeps old shards":  {"Shards"},
		"resume takes digest":     {"OpenRun"},
		"resume takes trace id":   {"OpenRun"},
		"page overwritten":        {"PutPage"},
		"page payloads dropped":   {"PutPage"},
		"submissions of a prefix": {"ListSubmissions"},
		"pages placed by name":    {"PagePartitions"},
	})
}

// TestBrokenStore runs the suite against the broken store its child
// process names.
func TestBrokenStore(t *testing.T) {
	name := suitecheck.Broken(t)
	stores := map[string]func() ledger.Store{
		"mark overwritten":        func() ledger.Store { return markOverwritten{newMemStore()} },
		"range past last":         func() ledger.Store { return rangePastLast{newMemStore()} },
		"marks of every group":    func() ledger.Store { return marksOfEveryGroup{newMemStore()} },
		"resume takes shards":     func() ledger.Store { return resumeTakesShards{newMemStore()} },
		"force keeps old shards":  func() ledger.Store { return forceKeepsOldShards{newMemStore()} },
		"resume takes digest":     func() ledger.Store { return resumeTakesDigest{newMemStore()} },
		"resume takes trace id":   func() ledger.Store { return resumeTakesTraceID{newMemStore()} },
		"page overwritten":        func() ledger.Store { return pageOverwritten{newMemStore()} },
		"page payloads dropped":   func() ledger.Store { return pagePayloadsDropped{newMemStore()} },
		"submissions of a prefix": func() ledger.Store { return submissionsOfAPrefix{newMemStore()} },
		"pages placed by name":    func() ledger.Store { return pagesPlacedByName{newMemStore()} },
	}
	Run(t, Harness{NewStore: func(*testing.T) ledger.Store { return stores[name]() }})
}

// submissionsOfAPrefix lists the submissions of every job whose name
// starts with the job's, as a range read with a bound too wide would.
type submissionsOfAPrefix struct{ *memStore }

func (s submissionsOfAPrefix) ListSubmissions(_ context.Context, p ledger.ListSubmissionsParams) ([]ledger.Run, error) {
	return s.submissions(func(r ledger.Run) bool { return strings.HasPrefix(r.ID.Job, p.Job) }, p.Limit), nil
}

// pagesPlacedByName spreads a large run over 8 partitions and keeps its
// Pages, but places its items by name (ledger.ItemPartition), as a store
// that ignores Pages would: a range reads first's name partition only.
type pagesPlacedByName struct{ *memStore }

func (s pagesPlacedByName) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	r, out, err := s.memStore.OpenRun(ctx, p)
	if err == nil && out == ledger.Opened && p.Shards > 16 {
		s.mu.Lock()
		r.Partitions, r.Pages = 8, p.Pages
		s.runs[jobspec.TickKey(r.ID)] = r
		s.mu.Unlock()
	}
	return r, out, err
}

func (s pagesPlacedByName) ListItemRange(ctx context.Context, run ledger.RunID, first, last string) ([]ledger.Item, error) {
	items, err := s.memStore.ListItemRange(ctx, run, first, last)
	r, rerr := ledger.GetRunOf(ctx, s.memStore, run)
	if err != nil || rerr != nil || r.ID != run || r.Partitions < 2 {
		return items, err
	}
	var out []ledger.Item
	for _, it := range items {
		if ledger.ItemPartition(it.Key.Asset, r.Partitions) == ledger.ItemPartition(first, r.Partitions) {
			out = append(out, it)
		}
	}
	return out, nil
}

// markOverwritten writes a mark whether or not it exists.
type markOverwritten struct{ *memStore }

func (s markOverwritten) MarkDone(ctx context.Context, p ledger.MarkParams) (ledger.Mark, error) {
	s.mu.Lock()
	delete(s.marks, markKey{p.Run.String(), p.Level, p.Index})
	s.mu.Unlock()
	return s.memStore.MarkDone(ctx, p)
}

// rangePastLast ignores the range's upper bound.
type rangePastLast struct{ *memStore }

func (s rangePastLast) ListItemRange(ctx context.Context, run ledger.RunID, first, _ string) ([]ledger.Item, error) {
	return s.memStore.ListItemRange(ctx, run, first, "\xff")
}

// marksOfEveryGroup lists a level's marks whatever their group.
type marksOfEveryGroup struct{ *memStore }

func (s marksOfEveryGroup) ListMarks(_ context.Context, run ledger.RunID, level, _ int) ([]ledger.Mark, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ledger.Mark
	for k, mk := range s.marks {
		if k.run == run.String() && k.level == level {
			out = append(out, mk)
		}
	}
	return out, nil
}

// resumeTakesShards lets a resume change the generation's shard count.
type resumeTakesShards struct{ *memStore }

func (s resumeTakesShards) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	r, out, err := s.memStore.OpenRun(ctx, p)
	if err == nil && out == ledger.Resumed {
		s.mu.Lock()
		r.Shards = max(p.Shards, 1)
		s.runs[jobspec.TickKey(r.ID)] = r
		s.mu.Unlock()
	}
	return r, out, err
}

// resumeTakesDigest lets a resume replace the generation's digest.
type resumeTakesDigest struct{ *memStore }

func (s resumeTakesDigest) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	r, out, err := s.memStore.OpenRun(ctx, p)
	if err == nil && out == ledger.Resumed {
		s.mu.Lock()
		r.Digest = p.Digest
		s.runs[jobspec.TickKey(r.ID)] = r
		s.mu.Unlock()
	}
	return r, out, err
}

// resumeTakesTraceID lets a resume replace the generation's trace id.
type resumeTakesTraceID struct{ *memStore }

func (s resumeTakesTraceID) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	r, out, err := s.memStore.OpenRun(ctx, p)
	if err == nil && out == ledger.Resumed {
		s.mu.Lock()
		r.TraceID = p.TraceID
		s.runs[jobspec.TickKey(r.ID)] = r
		s.mu.Unlock()
	}
	return r, out, err
}

// forceKeepsOldShards opens a forced generation with the old one's shards.
type forceKeepsOldShards struct{ *memStore }

func (s forceKeepsOldShards) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	s.mu.Lock()
	old, ok := s.runs[jobspec.TickKey(ledger.RunID{Job: p.Job, Nominal: p.Nominal})]
	s.mu.Unlock()
	r, out, err := s.memStore.OpenRun(ctx, p)
	if err == nil && ok && p.Force {
		s.mu.Lock()
		r.Shards = old.Shards
		s.runs[jobspec.TickKey(r.ID)] = r
		s.mu.Unlock()
	}
	return r, out, err
}

// TestStateMachineFindsBrokenStores runs the state-machine checker against
// stores broken on purpose and requires rapid to falsify each one, so that
// a passing state-machine test means something.
func TestStateMachineFindsBrokenStores(t *testing.T) {
	// rapid saves a fail file for every failure it finds, under the working
	// directory; keep them out of the source tree. No case here may run in
	// parallel.
	t.Chdir(t.TempDir())

	broken := []struct {
		name  string
		store ledger.Store
	}{
		{"CompleteIgnoresAttempt", completeIgnoresAttempt{newMemStore()}},
		{"CancelOverwritesTerminal", cancelOverwritesTerminal{newMemStore()}},
		{"ClaimIgnoresSkew", claimIgnoresSkew{newMemStore()}},
		{"ExtendIgnoresAttempt", extendIgnoresAttempt{newMemStore()}},
	}
	for _, c := range broken {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			// One Check nearly always finds these; a few more keep the
			// test steady with -short (a fifth of the checks).
			var fake *fakeTB
			for range 5 {
				fake = &fakeTB{name: "Broken" + c.name}
				rapid.Check(fake, func(rt *rapid.T) { checkItemMachine(ctx, rt, c.store) })
				if fake.Failed() {
					break
				}
			}
			require.True(t, fake.Failed(), "rapid found no failure in a broken store")
			require.Contains(t, fake.errors(), "[rapid] failed after", "a falsified property, not a panic")
			t.Log(fake.errors(), fake.logs())
		})
	}
}

// completeIgnoresAttempt accepts a completion from the current owner
// whatever attempt it names: a stale attempt's late result wins.
type completeIgnoresAttempt struct{ *memStore }

func (s completeIgnoresAttempt) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	if cur, err := s.GetItem(ctx, p.Key); err == nil && cur.Owner == p.Owner {
		p.Attempt = cur.Attempt
	}
	return s.memStore.Complete(ctx, p)
}

// extendIgnoresAttempt extends the lease of the current owner whatever
// attempt it names: a stale attempt's heartbeat keeps the item from its
// new holder's successor.
type extendIgnoresAttempt struct{ *memStore }

func (s extendIgnoresAttempt) Extend(ctx context.Context, p ledger.ExtendParams) (ledger.Item, error) {
	if cur, err := s.GetItem(ctx, p.Key); err == nil && cur.Owner == p.Owner {
		p.Attempt = cur.Attempt
	}
	return s.memStore.Extend(ctx, p)
}

// cancelOverwritesTerminal cancels whatever the state.
type cancelOverwritesTerminal struct{ *memStore }

func (s cancelOverwritesTerminal) Cancel(ctx context.Context, p ledger.CancelParams) (ledger.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := s.items[p.Key.String()]
	if !ok {
		it = ledger.Item{Key: p.Key, CreatedAt: p.Now}
	}
	it.State, it.Error, it.FinishedAt, it.UpdatedAt = ledger.ItemCancelled, p.Reason, p.Now, p.Now
	s.items[p.Key.String()] = it
	return it, nil
}

// claimIgnoresSkew takes over leases as soon as LeaseUntil passes.
type claimIgnoresSkew struct{ *memStore }

func (s claimIgnoresSkew) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Item, error) {
	p.Skew = 0
	return s.memStore.Claim(ctx, p)
}

// fakeTB stands in for the *testing.T of rapid.Check, recording the
// failure instead of failing the test.
type fakeTB struct {
	name string

	mu     sync.Mutex
	failed bool
	errs   strings.Builder
	log    strings.Builder
}

var _ rapid.TB = (*fakeTB)(nil)

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return f.name }

func (f *fakeTB) Logf(format string, args ...any) { f.logf(format, args...) }
func (f *fakeTB) Log(args ...any)                 { f.logf("%s", fmt.Sprint(args...)) }

func (f *fakeTB) Errorf(format string, args ...any) { f.fail(fmt.Sprintf(format, args...)) }
func (f *fakeTB) Error(args ...any)                 { f.fail(fmt.Sprint(args...)) }
func (f *fakeTB) Fatalf(format string, args ...any) { f.fail(fmt.Sprintf(format, args...)) }
func (f *fakeTB) Fatal(args ...any)                 { f.fail(fmt.Sprint(args...)) }
func (f *fakeTB) FailNow()                          { f.fail("") }
func (f *fakeTB) Fail()                             { f.fail("") }

// Skipping is not expected of the checker: record it as a failure so the
// test says so.
func (f *fakeTB) Skipf(format string, args ...any) {
	f.fail("skipped: " + fmt.Sprintf(format, args...))
}
func (f *fakeTB) Skip(args ...any) { f.fail("skipped: " + fmt.Sprint(args...)) }
func (f *fakeTB) SkipNow()         { f.fail("skipped") }

func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *fakeTB) fail(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	if msg != "" {
		f.errs.WriteString(msg + "\n")
	}
}

func (f *fakeTB) logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(&f.log, format+"\n", args...)
}

// errors is what rapid reported as failures.
func (f *fakeTB) errors() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.errs.String()
}

// logs is what the minimized failing sequence logged.
func (f *fakeTB) logs() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log.String()
}

// pageOverwritten writes a page whether or not it exists.
type pageOverwritten struct{ *memStore }

func (s pageOverwritten) PutPage(ctx context.Context, p ledger.PutPageParams) (ledger.Page, error) {
	s.mu.Lock()
	delete(s.pages, markKey{run: p.Run.String(), index: p.Index})
	s.mu.Unlock()
	return s.memStore.PutPage(ctx, p)
}

// pagePayloadsDropped keeps a page's names but not its payloads.
type pagePayloadsDropped struct{ *memStore }

func (s pagePayloadsDropped) PutPage(ctx context.Context, p ledger.PutPageParams) (ledger.Page, error) {
	items := make([]ledger.PageItem, len(p.Items))
	for i, it := range p.Items {
		items[i].Name = it.Name
	}
	p.Items = items
	return s.memStore.PutPage(ctx, p)
}
