package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sync/errgroup"
)

// SendAllOptions tune SendAll. The zero value is usable.
type SendAllOptions struct {
	// Parallel is the number of batches in flight at once; 0 means 4.
	Parallel int
	// Retries is how many times entries that failed are sent again; 0 means 3.
	Retries int
}

// SendAll sends msgs in batches of at most MaxBatch entries and
// MaxBatchBytes, up to Parallel batches at once, retrying only the entries
// that failed. Entry ids are assigned per batch; the ids in msgs are
// ignored. It returns the number of messages sent, in order from the front
// of msgs: on error, msgs[:sent] were all accepted (later ones may have been
// too).
func SendAll(ctx context.Context, s Sender, msgs []Message, o *SendAllOptions) (sent int, err error) {
	parallel, retries := 4, 3
	if o != nil && o.Parallel > 0 {
		parallel = o.Parallel
	}
	if o != nil && o.Retries > 0 {
		retries = o.Retries
	}
	batches := split(msgs)
	errs := make([]error, len(batches))
	// A failed batch does not stop the others: each one's error is kept,
	// and the first in order decides what was sent.
	var g errgroup.Group
	g.SetLimit(parallel)
	for i, b := range batches {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			continue
		}
		g.Go(func() error {
			errs[i] = sendBatch(ctx, s, msgs[b.lo:b.hi], retries)
			return nil
		})
	}
	_ = g.Wait()
	for i, b := range batches {
		if errs[i] != nil {
			return b.lo, fmt.Errorf("send messages %d..%d: %w", b.lo, b.hi-1, errs[i])
		}
	}
	return len(msgs), nil
}

type span struct{ lo, hi int }

// split cuts msgs into spans that respect MaxBatch and MaxBatchBytes.
func split(msgs []Message) []span {
	var out []span
	lo, size := 0, 0
	for i, m := range msgs {
		if i > lo && (i-lo == MaxBatch || size+m.Size() > MaxBatchBytes) {
			out = append(out, span{lo, i})
			lo, size = i, 0
		}
		size += m.Size()
	}
	if lo < len(msgs) {
		out = append(out, span{lo, len(msgs)})
	}
	return out
}

func sendBatch(ctx context.Context, s Sender, msgs []Message, retries int) error {
	pending := make([]Message, len(msgs))
	for i, m := range msgs {
		m.ID = strconv.Itoa(i)
		pending[i] = m
	}
	var err error
	for try := 0; try <= retries && len(pending) > 0; try++ {
		err = s.SendBatch(ctx, pending)
		if err == nil {
			return nil
		}
		var be *BatchError
		if !errors.As(err, &be) {
			if errors.Is(err, ErrBatchTooLarge) || ctx.Err() != nil {
				return err
			}
			continue // the whole call failed; resend everything
		}
		failed := make(map[string]bool, len(be.Failed))
		for _, f := range be.Failed {
			failed[f.ID] = true
		}
		next := pending[:0:0]
		for _, m := range pending {
			if failed[m.ID] {
				next = append(next, m)
			}
		}
		pending = next
	}
	if len(pending) == 0 {
		return nil
	}
	return err
}
