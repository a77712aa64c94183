package chaos_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/chaos"
	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
)

// The suite must be able to fail: each case breaks one thing the design
// relies on, in the test process's consumers, and the report must miss
// the goal that breakage is about.
func TestChaosCatchesBreakage(t *testing.T) {
	t.Parallel()
	if *long {
		t.Skip("the self-checks run with the small suite")
	}
	cases := []struct {
		name   string
		breaks func(*chaos.Config)
		missed func(*chaos.Report) bool
	}{
		{
			name:   "acknowledged without completing",
			breaks: func(c *chaos.Config) { c.WrapHandle = ackWithoutCompleting },
			missed: func(r *chaos.Report) bool { return len(r.LostItems) > 0 && len(r.StuckRuns) > 0 },
		},
		{
			name:   "terminal items claimed again",
			breaks: func(c *chaos.Config) { c.WrapLedger = func(l ledger.Store) ledger.Store { return forgetfulLedger{l} } },
			missed: func(r *chaos.Report) bool { return r.EffectsTwice() > 0 },
		},
		{
			name:   "no dead-letter queue",
			breaks: func(c *chaos.Config) { c.NoDeadLetter = true },
			missed: func(r *chaos.Report) bool { return r.PoisonSent > 0 && r.PoisonPercent() < 100 },
		},
		{
			name: "superseded left in the queue",
			breaks: func(c *chaos.Config) {
				c.Replays = 1
				c.WrapHandle = failSuperseded
			},
			missed: func(r *chaos.Report) bool { return r.SupersededEligible > 0 && r.SupersededPercent() < 100 },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := chaos.Small()
			cfg.Seed = *seed
			cfg.Ticks, cfg.Consumers, cfg.Processes, cfg.Settle = 5, 2, 0, 5*time.Second
			tc.breaks(&cfg)
			rep := chaos.Run(t, harnesses[0], cfg)
			t.Log("\n" + rep.Table())
			require.True(t, tc.missed(rep), "the report did not catch it:\n%s", rep.Table())
			require.NotEmpty(t, rep.Missed())
		})
	}
}

// A check whose event did not occur must make it occur: when every
// planned replay misses (as under load), the run forces one with its
// fault-free coordinator, so the superseded check has a sample to judge
// and meets its goal instead of reporting "n/a (0 of 0)" as a miss.
func TestChaosMakesTheSupersededCaseOccur(t *testing.T) {
	t.Parallel()
	if *long {
		t.Skip("the self-checks run with the small suite")
	}
	cfg := chaos.Small()
	cfg.Seed = *seed
	cfg.Ticks, cfg.Consumers, cfg.Processes, cfg.Settle = 4, 2, 0, 5*time.Second
	cfg.Replays, cfg.MissReplays = 1, true
	rep := chaos.Run(t, harnesses[0], cfg)
	t.Log("\n" + rep.Table())
	require.Positive(t, rep.SupersededEligible, "no superseded delivery was judged:\n%s", rep.Table())
	require.Empty(t, rep.Missed(), "chaos goals missed:\n%s", rep.Table())
}

// ackWithoutCompleting acknowledges every fourth message without handing
// it to the consumer.
func ackWithoutCompleting(next chaos.HandleFunc) chaos.HandleFunc {
	var n atomic.Int64
	return func(ctx context.Context, deadline time.Time, msgs []queue.Delivery) consumer.Result {
		var pass []queue.Delivery
		var skipped []consumer.MessageOutcome
		for _, m := range msgs {
			if n.Add(1)%4 == 0 {
				skipped = append(skipped, consumer.MessageOutcome{MessageID: m.MessageID, Status: consumer.StatusSucceeded})
				continue
			}
			pass = append(pass, m)
		}
		var res consumer.Result
		if len(pass) > 0 {
			res = next(ctx, deadline, pass)
		}
		res.Items = append(res.Items, skipped...)
		return res
	}
}

// failSuperseded leaves superseded messages in the queue instead of
// acknowledging them.
func failSuperseded(next chaos.HandleFunc) chaos.HandleFunc {
	return func(ctx context.Context, deadline time.Time, msgs []queue.Delivery) consumer.Result {
		res := next(ctx, deadline, msgs)
		for _, it := range res.Items {
			if it.Status == consumer.StatusSuperseded {
				res.Failed = append(res.Failed, consumer.Failure{MessageID: it.MessageID, Err: errors.New("left in the queue")})
			}
		}
		return res
	}
}

// forgetfulLedger forgets that terminal is terminal: a claim of a
// SUCCEEDED item is granted as a new attempt, and the completion of an
// item already terminal is accepted.
type forgetfulLedger struct{ ledger.Store }

func (l forgetfulLedger) Claim(ctx context.Context, p ledger.ClaimParams) (ledger.Item, error) {
	it, err := l.Store.Claim(ctx, p)
	if errors.Is(err, ledger.ErrTerminal) && it.State == ledger.ItemSucceeded {
		it.State, it.Owner, it.Attempt, it.LeaseUntil = ledger.ItemRunning, p.Owner, it.Attempt+1, p.LeaseUntil
		return it, nil
	}
	return it, err
}

func (l forgetfulLedger) Complete(ctx context.Context, p ledger.CompleteParams) (ledger.Item, error) {
	it, err := l.Store.Complete(ctx, p)
	if errors.Is(err, ledger.ErrTerminal) {
		return it, nil
	}
	return it, err
}
