package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/queue"
)

type recorder struct {
	mu   sync.Mutex
	got  []string
	fail map[string]bool // entry ids refused
}

func (r *recorder) SendBatch(_ context.Context, msgs []queue.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var be queue.BatchError
	for _, m := range msgs {
		if r.fail[m.ID] {
			be.Failed = append(be.Failed, queue.EntryError{ID: m.ID, Err: errors.New("refused")})
			continue
		}
		r.got = append(r.got, m.ID)
	}
	if len(be.Failed) > 0 {
		return &be
	}
	return nil
}

func msg(id, key string) queue.Message {
	return queue.Message{ID: id, Body: []byte(key), Attributes: map[string]string{queue.AttrKey: key}}
}

func TestByJobRoutesByTheKeysJob(t *testing.T) {
	t.Parallel()
	shared, noisy := &recorder{}, &recorder{fail: map[string]bool{"n2": true}}
	s := queue.ByJob(shared, map[string]queue.Sender{"noisy": noisy})
	err := s.SendBatch(context.Background(), []queue.Message{
		msg("f1", "fx@2026-11-21T12:01:00Z#1/EURUSD"),
		msg("n1", "noisy@2026-11-21T12:01:00Z#1/A"),
		msg("n2", "noisy@2026-11-21T12:01:00Z#1/B"),
		msg("n3", "noisy+order-42#1/C"),
		msg("x", "not a key"),
		{ID: "bare", Body: []byte("no attributes")},
	})
	var be *queue.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, 1)
	require.Equal(t, "n2", be.Failed[0].ID)
	require.Equal(t, []string{"f1", "x", "bare"}, shared.got)
	require.Equal(t, []string{"n1", "n3"}, noisy.got, "a submission's items go to its job's queue too")

	require.Same(t, shared, queue.ByJob(shared, nil).(*recorder), "no routes: the shared queue itself")
}
