package chaos

import (
	"context"
	"errors"
	"time"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/lease"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// errKilled is what every store call of a killed consumer batch or
// coordinator invocation returns: the process is gone, nothing it asks for
// happens any more.
var errKilled = errors.New("killed by the chaos suite")

// Store calls a fault can stop, by name.
const (
	opAcquire          = "lease.Acquire"
	opRenew            = "lease.Renew"
	opRelease          = "lease.Release"
	opInspect          = "lease.Inspect"
	opContention       = "lease.Contention"
	opOpenRun          = "ledger.OpenRun"
	opAdvanceRun       = "ledger.AdvanceRun"
	opFinishRun        = "ledger.FinishRun"
	opGetRun           = "ledger.GetRun"
	opListRuns         = "ledger.ListRuns"
	opClaim            = "ledger.Claim"
	opComplete         = "ledger.Complete"
	opFail             = "ledger.Fail"
	opReleaseItem      = "ledger.Release"
	opExtend           = "ledger.Extend"
	opCancel           = "ledger.Cancel"
	opGetItem          = "ledger.GetItem"
	opListItems        = "ledger.ListItems"
	opListItemRange    = "ledger.ListItemRange"
	opMarkDone         = "ledger.MarkDone"
	opListMarks        = "ledger.ListMarks"
	opPutPage          = "ledger.PutPage"
	opGetPage          = "ledger.GetPage"
	opSend             = "queue.Send"        // messages of catalog assets, or poison
	opSendDerived      = "queue.SendDerived" // a batch holding a derived item's message
	opDeadLetter       = "queue.DeadLetter"
	opEffectPut        = "effect.Put"
	opEffectGet        = "effect.Get"
	opRecordContention = "lease.RecordContention"
)

// fault decides, call by call, whether the process making the calls dies.
// before runs before a call: an error stops it (the process died before
// it). after runs once a call succeeded: an error hides its result (the
// process died after it took effect). ticket links the two.
type fault interface {
	before(op, key string) (ticket int, err error)
	after(ticket int, op, key string) error
}

type faultKey struct{}

// withFault returns ctx carrying f: the wrapped stores consult it on every
// call made under ctx.
func withFault(ctx context.Context, f fault) context.Context {
	return context.WithValue(ctx, faultKey{}, f)
}

func faultOf(ctx context.Context) fault {
	f, _ := ctx.Value(faultKey{}).(fault)
	return f
}

// call runs do under ctx's fault, if any.
func call[T any](ctx context.Context, op, key string, do func() (T, error)) (T, error) {
	f := faultOf(ctx)
	if f == nil {
		return do()
	}
	var zero T
	ticket, err := f.before(op, key)
	if err != nil {
		return zero, err
	}
	v, err := do()
	if err != nil {
		return v, err
	}
	if err := f.after(ticket, op, key); err != nil {
		return v, err
	}
	return v, nil
}

func call0(ctx context.Context, op, key string, do func() error) error {
	_, err := call(ctx, op, key, func() (struct{}, error) { return struct{}{}, do() })
	return err
}

// faulty returns b with every store and queue consulting the fault of the
// context each call is made under. Calls without one pass straight
// through.
func faulty(b backend.Backend) backend.Backend {
	b.Leases = faultyLeases{b.Leases}
	b.Ledger = faultyLedger{b.Ledger}
	b.Effects = faultyEffects{b.Effects}
	b.Work = faultyQueue{Queue: b.Work, op: opSend}
	if b.DeadLetter != nil {
		b.DeadLetter = faultyQueue{Queue: b.DeadLetter, op: opDeadLetter}
	}
	return b
}

type faultyLeases struct{ s lease.Store }

var (
	_ lease.Store             = faultyLeases{}
	_ lease.ContentionCounter = faultyLeases{}
)

func (f faultyLeases) Acquire(ctx context.Context, p lease.AcquireParams) (lease.Lease, error) {
	return call(ctx, opAcquire, p.Job, func() (lease.Lease, error) { return f.s.Acquire(ctx, p) })
}

func (f faultyLeases) Renew(ctx context.Context, p lease.RenewParams) (lease.Lease, error) {
	return call(ctx, opRenew, p.Job, func() (lease.Lease, error) { return f.s.Renew(ctx, p) })
}

func (f faultyLeases) Release(ctx context.Context, p lease.ReleaseParams) error {
	return call0(ctx, opRelease, p.Job, func() error { return f.s.Release(ctx, p) })
}

func (f faultyLeases) Inspect(ctx context.Context, job string) (lease.Lease, error) {
	return call(ctx, opInspect, job, func() (lease.Lease, error) { return f.s.Inspect(ctx, job) })
}

func (f faultyLeases) RecordContention(ctx context.Context, job string, holder lease.Lease, now time.Time, ttl time.Duration) error {
	c, ok := f.s.(lease.ContentionCounter)
	if !ok {
		return errors.ErrUnsupported
	}
	return call0(ctx, opRecordContention, job, func() error { return c.RecordContention(ctx, job, holder, now, ttl) })
}

func (f faultyLeases) Contention(ctx context.Context, job string) (lease.Contention, error) {
	c, ok := f.s.(lease.ContentionCounter)
	if !ok {
		return lease.Contention{}, errors.ErrUnsupported
	}
	return call(ctx, opContention, job, func() (lease.Contention, error) { return c.Contention(ctx, job) })
}

type faultyLedger struct{ s ledger.Store }

var _ ledger.Store = faultyLedger{}

func (f faultyLedger) OpenRun(ctx context.Context, p ledger.OpenRunParams) (ledger.Run, ledger.OpenOutcome, error) {
	type res struct {
		run ledger.Run
		out ledger.OpenOutcome
	}
	r, err := call(ctx, opOpenRun, p.Job, func() (res, error) {
		run, out, err := f.s.OpenRun(ctx, p)
		return res{run, out}, err
	})
	return r.run, r.out, err
}

func (f faultyLedger) AdvanceRun(ctx context.Context, p ledger.AdvanceRunParams) (ledger.Run, error) {
	return call(ctx, opAdvanceRun, p.ID.String(), func() (ledger.Run, error) { return f.s.AdvanceRun(ctx, p) })
}

func (f faultyLedger) FinishRun(ctx context.Context, p ledger.FinishRunParams) (ledger.Run, error) {
	return call(ctx, opFinishRun, p.ID.String(), func() (ledger.Run, error) { return f.s.FinishRun(ctx, p) })
}

func (f faultyLedger) GetRun(ctx context.Context, job string, nominal time.Time) (ledger.Run, error) {
	return call(ctx, opGetRun, job, func() (ledger.Run, error) { return f.s.GetRun(ctx, job, nominal) })
}

func (f faultyLedger) ListRuns(ctx context.Context, p ledger.ListRunsParams) ([]ledger.Run, error) {
	return call(ctx, opListRuns, p.Job, func() ([]ledger.Run, error) { return f.s.ListRuns(ctx, p) })
}

func (f faultyLedger) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Item, error) {
	return call(ctx, opClaim, p.Key.String(), func() (ledger.Item, error) { return f.s.Claim(ctx, p) })
}

func (f faultyLedger) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	return call(ctx, opComplete, p.Key.String(), func() (ledger.Item, error) { return f.s.Complete(ctx, p) })
}

func (f faultyLedger) Fail(ctx context.Context, p ledger.FailParams) (ledger.Item, error) {
	return call(ctx, opFail, p.Key.String(), func() (ledger.Item, error) { return f.s.Fail(ctx, p) })
}

func (f faultyLedger) Release(ctx context.Context, p ledger.ReleaseParams) (ledger.Item, error) {
	return call(ctx, opReleaseItem, p.Key.String(), func() (ledger.Item, error) { return f.s.Release(ctx, p) })
}

func (f faultyLedger) Extend(ctx context.Context, p ledger.ExtendParams) (ledger.Item, error) {
	return call(ctx, opExtend, p.Key.String(), func() (ledger.Item, error) { return f.s.Extend(ctx, p) })
}

func (f faultyLedger) Cancel(ctx context.Context, p ledger.CancelParams) (ledger.Item, error) {
	return call(ctx, opCancel, p.Key.String(), func() (ledger.Item, error) { return f.s.Cancel(ctx, p) })
}

func (f faultyLedger) GetItem(ctx context.Context, key ledger.ItemKey) (ledger.Item, error) {
	return call(ctx, opGetItem, key.String(), func() (ledger.Item, error) { return f.s.GetItem(ctx, key) })
}

func (f faultyLedger) ListItems(ctx context.Context, run ledger.RunID) ([]ledger.Item, error) {
	return call(ctx, opListItems, run.String(), func() ([]ledger.Item, error) { return f.s.ListItems(ctx, run) })
}

func (f faultyLedger) ListItemRange(ctx context.Context, run ledger.RunID, first, last string) ([]ledger.Item, error) {
	return call(ctx, opListItemRange, run.String(), func() ([]ledger.Item, error) { return f.s.ListItemRange(ctx, run, first, last) })
}

func (f faultyLedger) MarkDone(ctx context.Context, p ledger.MarkParams) (ledger.Mark, error) {
	return call(ctx, opMarkDone, p.Run.String(), func() (ledger.Mark, error) { return f.s.MarkDone(ctx, p) })
}

func (f faultyLedger) ListMarks(ctx context.Context, run ledger.RunID, level, group int) ([]ledger.Mark, error) {
	return call(ctx, opListMarks, run.String(), func() ([]ledger.Mark, error) { return f.s.ListMarks(ctx, run, level, group) })
}

func (f faultyLedger) PutPage(ctx context.Context, p ledger.PutPageParams) (ledger.Page, error) {
	return call(ctx, opPutPage, p.Run.String(), func() (ledger.Page, error) { return f.s.PutPage(ctx, p) })
}

func (f faultyLedger) GetPage(ctx context.Context, run ledger.RunID, index int) (ledger.Page, error) {
	return call(ctx, opGetPage, run.String(), func() (ledger.Page, error) { return f.s.GetPage(ctx, run, index) })
}

type faultyEffects struct{ s effect.Store }

var _ effect.Store = faultyEffects{}

func (f faultyEffects) Put(ctx context.Context, r effect.Record) error {
	return call0(ctx, opEffectPut, r.Key, func() error { return f.s.Put(ctx, r) })
}

func (f faultyEffects) Get(ctx context.Context, job, key string) (effect.Record, error) {
	return call(ctx, opEffectGet, key, func() (effect.Record, error) { return f.s.Get(ctx, job, key) })
}

// faultyQueue stops sends; receives, deletes and visibility changes pass
// through (the consumers' receiver decides about those).
type faultyQueue struct {
	backend.Queue
	op string
}

func (f faultyQueue) SendBatch(ctx context.Context, msgs []queue.Message) error {
	op := f.op
	if op == opSend && holdsDerived(msgs) {
		op = opSendDerived
	}
	return call0(ctx, op, "", func() error { return f.Queue.SendBatch(ctx, msgs) })
}

// holdsDerived reports whether one of msgs is a derived item's message.
func holdsDerived(msgs []queue.Message) bool {
	for _, m := range msgs {
		if d, err := message.Decode(m.Body); err == nil && d.Derived {
			return true
		}
	}
	return false
}
