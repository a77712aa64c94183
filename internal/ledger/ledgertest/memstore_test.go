package ledgertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

// memStore is an in-memory ledger.Store whose items follow the model. It
// lets the suite test itself: the suite's hand-written expectations must
// agree with the model, and the checker must catch stores that break it.
type memStore struct {
	mu    sync.Mutex
	runs  map[string]ledger.Run  // by RunID.TickKey
	items map[string]ledger.Item // by ItemKey.String
	marks map[markKey]ledger.Mark
	pages map[markKey]ledger.Page // level unused
}

type markKey struct {
	run          string
	level, index int
}

var _ ledger.Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{runs: map[string]ledger.Run{}, items: map[string]ledger.Item{}, marks: map[markKey]ledger.Mark{}, pages: map[markKey]ledger.Page{}}
}

func (m *memStore) OpenRun(_ context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := ledger.RunID{Job: p.Job, Nominal: p.Nominal.UTC(), Generation: 1}
	if p.Submission != "" {
		id = ledger.RunID{Job: p.Job, Submission: p.Submission, Generation: 1}
	}
	r, ok := m.runs[jobspec.TickKey(id)]
	switch {
	case !ok || p.Force:
		if ok {
			id.Generation = r.ID.Generation + 1
		}
		r = ledger.Run{ID: id, State: ledger.RunFanningOut, Fence: p.Fence, OpenFence: p.Fence, Shards: max(p.Shards, 1), Digest: p.Digest, TraceID: p.TraceID, OpenedAt: p.Now, UpdatedAt: p.Now}
		m.runs[jobspec.TickKey(id)] = r
		return r, ledger.Opened, nil
	case r.State != ledger.RunFanningOut:
		return r, ledger.AlreadyFannedOut, nil
	case r.Fence > p.Fence:
		return r, "", fmt.Errorf("open %s: fence %d below %d: %w", id, p.Fence, r.Fence, ledger.ErrConflict)
	}
	r.Fence, r.UpdatedAt = p.Fence, p.Now
	m.runs[jobspec.TickKey(id)] = r
	return r, ledger.Resumed, nil
}

func (m *memStore) AdvanceRun(_ context.Context, p ledger.AdvanceRunParams) (ledger.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[jobspec.TickKey(p.ID)]
	switch {
	case !ok:
		return ledger.Run{}, fmt.Errorf("advance %s: %w", p.ID, ledger.ErrNotFound)
	case r.ID.Generation != p.ID.Generation || r.State != ledger.RunFanningOut || r.Fence > p.Fence || r.Cursor > p.Cursor:
		return r, fmt.Errorf("advance %s: %w", p.ID, ledger.ErrConflict)
	}
	r.Cursor, r.Fence, r.UpdatedAt = p.Cursor, p.Fence, p.Now
	if p.Done {
		r.State, r.Total = ledger.RunFannedOut, p.Cursor
	}
	m.runs[jobspec.TickKey(p.ID)] = r
	return r, nil
}

func (m *memStore) FinishRun(_ context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[jobspec.TickKey(p.ID)]
	switch {
	case !ok:
		return ledger.Run{}, fmt.Errorf("finish %s: %w", p.ID, ledger.ErrNotFound)
	case r.ID.Generation != p.ID.Generation:
		return r, fmt.Errorf("finish %s: %w", p.ID, ledger.ErrConflict)
	case r.State.Finished():
		return r, fmt.Errorf("finish %s: %w", p.ID, ledger.ErrTerminal)
	case r.State != ledger.RunFannedOut:
		return r, fmt.Errorf("finish %s: %w", p.ID, ledger.ErrConflict)
	}
	r.State = ledger.RunComplete
	if p.Dead+p.Cancelled > 0 {
		r.State = ledger.RunPartial
	}
	r.Succeeded, r.Dead, r.Cancelled = p.Succeeded, p.Dead, p.Cancelled
	r.FinishedAt, r.UpdatedAt = p.Now, p.Now
	m.runs[jobspec.TickKey(p.ID)] = r
	return r, nil
}

func (m *memStore) GetRun(_ context.Context, job string, nominal time.Time) (ledger.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := ledger.RunIDOf(job, nominal, 0)
	r, ok := m.runs[jobspec.TickKey(id)]
	if !ok {
		return ledger.Run{}, fmt.Errorf("get run %s: %w", jobspec.TickKey(id), ledger.ErrNotFound)
	}
	return r, nil
}

func (m *memStore) ListRuns(_ context.Context, p ledger.ListRunsParams) ([]ledger.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ledger.Run
	for _, r := range m.runs {
		if r.ID.Job == p.Job && !r.ID.Submitted() && (p.Before.IsZero() || r.ID.Nominal.Before(p.Before)) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b ledger.Run) int { return b.ID.Nominal.Compare(a.ID.Nominal) })
	limit := p.Limit
	if limit <= 0 {
		limit = 20
	}
	return out[:min(limit, len(out))], nil
}

// item applies one model transition to the record of key.
func (m *memStore) item(key ledger.ItemKey, transition func(cur *ledger.Item) (*ledger.Item, error)) (ledger.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var cur *ledger.Item
	if it, ok := m.items[key.String()]; ok {
		cur = &it
	}
	next, err := transition(cur)
	if next == nil {
		return ledger.Item{}, err
	}
	m.items[key.String()] = *cloneItem(*next)
	return *next, err
}

func (m *memStore) Claim(_ context.Context, p ledger.ClaimParams) (ledger.Item, error) {
	return m.item(p.Key, func(cur *ledger.Item) (*ledger.Item, error) { return modelClaim(cur, p) })
}

func (m *memStore) Complete(_ context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	return m.item(p.Key, func(cur *ledger.Item) (*ledger.Item, error) { return modelComplete(cur, p) })
}

func (m *memStore) Fail(_ context.Context, p ledger.FailParams) (ledger.Item, error) {
	return m.item(p.Key, func(cur *ledger.Item) (*ledger.Item, error) { return modelFail(cur, p) })
}

func (m *memStore) Extend(_ context.Context, p ledger.ExtendParams) (ledger.Item, error) {
	return m.item(p.Key, func(cur *ledger.Item) (*ledger.Item, error) { return modelExtend(cur, p) })
}

func (m *memStore) Release(_ context.Context, p ledger.ReleaseParams) (ledger.Item, error) {
	return m.item(p.Key, func(cur *ledger.Item) (*ledger.Item, error) { return modelRelease(cur, p) })
}

func (m *memStore) Cancel(_ context.Context, p ledger.CancelParams) (ledger.Item, error) {
	return m.item(p.Key, func(cur *ledger.Item) (*ledger.Item, error) { return modelCancel(cur, p) })
}

func (m *memStore) NoteWait(_ context.Context, p ledger.NoteWaitParams) (ledger.Item, error) {
	return m.item(p.Key, func(cur *ledger.Item) (*ledger.Item, error) { return modelNoteWait(cur, p) })
}

func (m *memStore) GetItem(_ context.Context, key ledger.ItemKey) (ledger.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.items[key.String()]
	if !ok {
		return ledger.Item{}, fmt.Errorf("get item %s: %w", key, ledger.ErrNotFound)
	}
	return *cloneItem(it), nil
}

func (m *memStore) ListItems(_ context.Context, run ledger.RunID) ([]ledger.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ledger.Item
	for _, it := range m.items {
		if it.Key.Run.String() == run.String() {
			out = append(out, *cloneItem(it))
		}
	}
	slices.SortFunc(out, func(a, b ledger.Item) int { return strings.Compare(a.Key.Asset, b.Key.Asset) })
	return out, nil
}

func (m *memStore) ListItemRange(ctx context.Context, run ledger.RunID, first, last string) ([]ledger.Item, error) {
	all, err := m.ListItems(ctx, run)
	var out []ledger.Item
	for _, it := range all {
		if first <= it.Key.Asset && it.Key.Asset <= last {
			out = append(out, it)
		}
	}
	return out, err
}

func (m *memStore) MarkDone(_ context.Context, p ledger.MarkParams) (ledger.Mark, error) {
	for _, f := range []struct {
		name string
		v    int
	}{{"level", p.Level}, {"index", p.Index}, {"succeeded", p.Succeeded}, {"dead", p.Dead}, {"cancelled", p.Cancelled}} {
		if f.v < 0 {
			return ledger.Mark{}, fmt.Errorf("mark %s: %s %d is negative", p.Run, f.name, f.v)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := markKey{p.Run.String(), p.Level, p.Index}
	if cur, ok := m.marks[k]; ok {
		return cur, fmt.Errorf("mark %s %d/%d: %w", p.Run, p.Level, p.Index, ledger.ErrTerminal)
	}
	mk := ledger.Mark{Run: p.Run, Level: p.Level, Index: p.Index, Succeeded: p.Succeeded, Dead: p.Dead, Cancelled: p.Cancelled, At: p.Now}
	m.marks[k] = mk
	return mk, nil
}

func (m *memStore) ListMarks(_ context.Context, run ledger.RunID, level, group int) ([]ledger.Mark, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ledger.Mark
	for k, mk := range m.marks {
		if k.run == run.String() && k.level == level && k.index/ledger.MarkGroup == group {
			out = append(out, mk)
		}
	}
	slices.SortFunc(out, func(a, b ledger.Mark) int { return a.Index - b.Index })
	return out, nil
}

func (m *memStore) PutPage(_ context.Context, p ledger.PutPageParams) (ledger.Page, error) {
	if err := ledger.CheckPage(p); err != nil {
		return ledger.Page{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := markKey{run: p.Run.String(), index: p.Index}
	if cur, ok := m.pages[k]; ok {
		return cur, fmt.Errorf("page %d of %s: %w", p.Index, p.Run, ledger.ErrTerminal)
	}
	items, err := ledger.DecodePageItems(ledger.EncodePageItems(p.Items))
	if err != nil {
		return ledger.Page{}, err
	}
	pg := ledger.Page{Run: p.Run, Index: p.Index, Items: items, Final: p.Final, Resume: p.Resume, Parent: p.Parent, At: p.Now}
	m.pages[k] = pg
	return pg, nil
}

func (m *memStore) GetPage(_ context.Context, run ledger.RunID, index int) (ledger.Page, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pg, ok := m.pages[markKey{run: run.String(), index: index}]
	if !ok {
		return ledger.Page{}, fmt.Errorf("page %d of %s: %w", index, run, ledger.ErrNotFound)
	}
	return pg, nil
}

// ListSubmissions implements ledger.SubmissionLister.
func (m *memStore) ListSubmissions(_ context.Context, p ledger.ListSubmissionsParams) ([]ledger.Run, error) {
	return m.submissions(func(r ledger.Run) bool { return r.ID.Job == p.Job }, p.Limit), nil
}

// submissions are the submission runs that keep says to, most recently
// updated first, at most limit (0: 20).
func (m *memStore) submissions(keep func(ledger.Run) bool, limit int) []ledger.Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ledger.Run
	for _, r := range m.runs {
		if r.ID.Submitted() && keep(r) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b ledger.Run) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	if limit <= 0 {
		limit = 20
	}
	return out[:min(limit, len(out))]
}
