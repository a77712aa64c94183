package leasetest

import (
	"fmt"
	"hash/maphash"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/batonhq/baton/internal/lease"
)

// The sequential specification of one job's lease, for porcupine.
//
// Inputs carry everything an operation's outcome depends on besides the
// record, including the Now the caller used, so the model is deterministic:
// given the record before an operation and its input, exactly one output is
// legal (up to the fence an acquisition mints, which need only be greater
// than the record's). A history is linearizable when its operations can be
// ordered, consistently with real time, so that each one's output is the
// model's. In particular no linearization has two live holders, and every
// acquisition's fence is greater than all fences minted before it.

// opKind names a Store method.
type opKind uint8

const (
	opAcquire opKind = iota + 1
	opRenew
	opRelease
	opInspect
)

func (k opKind) String() string {
	switch k {
	case opAcquire:
		return "acquire"
	case opRenew:
		return "renew"
	case opRelease:
		return "release"
	case opInspect:
		return "inspect"
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// opInput is one call. Times are nanoseconds since epoch; histories keep
// their clocks after epoch, so 0 always means the zero time.
type opInput struct {
	Kind  opKind
	Owner string // acquire, renew, release
	Fence int64  // renew, release
	Now   int64  // acquire, renew
	TTL   int64  // acquire, renew
	Skew  int64  // acquire
}

// outcome is how a call ended.
type outcome uint8

const (
	outOK        outcome = iota + 1
	outHeld              // *HeldError
	outNotHolder         // ErrNotHolder
	outNotFound          // ErrNotFound
)

func (o outcome) String() string {
	switch o {
	case outOK:
		return "ok"
	case outHeld:
		return "held"
	case outNotHolder:
		return "not holder"
	case outNotFound:
		return "not found"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// opOutput is a call's result: for outOK the record returned (acquire,
// renew, inspect; zero for release), for outHeld the holder reported.
type opOutput struct {
	Outcome outcome
	Rec     record
}

// record is a lease record in model form. AcquiredAt of a free record is
// not part of the contract and is kept at 0.
type record struct {
	Exists     bool
	Owner      string
	Fence      int64
	ExpiresAt  int64
	AcquiredAt int64
}

func (r record) String() string {
	switch {
	case !r.Exists:
		return "absent"
	case r.Owner == "":
		return fmt.Sprintf("free(fence %d)", r.Fence)
	}
	return fmt.Sprintf("%s(fence %d, acquired %s, expires %s)", r.Owner, r.Fence,
		time.Duration(r.AcquiredAt), time.Duration(r.ExpiresAt))
}

// toRecord converts a record a store returned.
func toRecord(l lease.Lease) record {
	r := record{Exists: true, Owner: l.Owner, Fence: l.Fence, ExpiresAt: sinceEpoch(l.ExpiresAt)}
	if l.Owner != "" {
		r.AcquiredAt = sinceEpoch(l.AcquiredAt)
	}
	return r
}

func sinceEpoch(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return int64(t.Sub(epoch))
}

// step is the model: whether out is the legal output of in on s, and the
// record after.
func step(s record, in opInput, out opOutput) (bool, record) {
	holds := s.Owner != "" && s.Owner == in.Owner && s.Fence == in.Fence
	switch in.Kind {
	case opAcquire:
		live := s.Owner != "" && in.Now < s.ExpiresAt+in.Skew
		if live && s.Owner != in.Owner {
			return out.Outcome == outHeld && out.Rec == s, s
		}
		next := record{Exists: true, Owner: in.Owner, Fence: out.Rec.Fence, ExpiresAt: in.Now + in.TTL, AcquiredAt: in.Now}
		return out.Outcome == outOK && out.Rec == next && next.Fence > s.Fence, next
	case opRenew:
		if holds && in.Now < s.ExpiresAt {
			next := s
			next.ExpiresAt = in.Now + in.TTL
			return out.Outcome == outOK && out.Rec == next, next
		}
		return out.Outcome == outNotHolder, s
	case opRelease:
		if holds {
			return out.Outcome == outOK, record{Exists: true, Fence: s.Fence}
		}
		return out.Outcome == outNotHolder, s
	case opInspect:
		if !s.Exists {
			return out.Outcome == outNotFound, s
		}
		return out.Outcome == outOK && out.Rec == s, s
	}
	return false, s
}

var modelSeed = maphash.MakeSeed()

// leaseModel is the porcupine model of one job's lease.
var leaseModel = porcupine.Model{
	Init: func() any { return record{} },
	Step: func(state, input, output any) (bool, any) {
		return step(state.(record), input.(opInput), output.(opOutput))
	},
	Hash: func(state any) uint64 { return maphash.Comparable(modelSeed, state.(record)) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(opInput), output.(opOutput)
		var call string
		switch in.Kind {
		case opAcquire:
			call = fmt.Sprintf("acquire(%s, now %s, ttl %s, skew %s)", in.Owner, time.Duration(in.Now), time.Duration(in.TTL), time.Duration(in.Skew))
		case opRenew:
			call = fmt.Sprintf("renew(%s, fence %d, now %s, ttl %s)", in.Owner, in.Fence, time.Duration(in.Now), time.Duration(in.TTL))
		case opRelease:
			call = fmt.Sprintf("release(%s, fence %d)", in.Owner, in.Fence)
		default:
			call = in.Kind.String()
		}
		if out.Outcome == outOK && in.Kind == opRelease {
			return call + " → ok"
		}
		if out.Outcome == outOK || out.Outcome == outHeld {
			return fmt.Sprintf("%s → %s %s", call, out.Outcome, out.Rec)
		}
		return fmt.Sprintf("%s → %s", call, out.Outcome)
	},
	DescribeState: func(state any) string { return state.(record).String() },
}
