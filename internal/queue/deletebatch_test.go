package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckHandles(t *testing.T) {
	t.Parallel()
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint("h", i)
		}
		return out
	}
	cases := []struct {
		name    string
		handles []string
		ok      bool
	}{
		{"nil", nil, false},
		{"empty", []string{}, false},
		{"one", []string{"a"}, true},
		{"max", many(MaxBatch), true},
		{"too many", many(MaxBatch + 1), false},
		{"twice", []string{"a", "b", "a"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := CheckHandles(c.handles)
			if c.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrBatchTooLarge)
			}
		})
	}
}

// deleter is a Receiver whose Delete knows the handles in live; it
// records the calls.
type deleter struct {
	live    map[string]bool
	broken  string // Delete of this handle fails with errBroken
	deletes []string
}

var errBroken = errors.New("broken")

func (d *deleter) Receive(context.Context, ReceiveParams) ([]Delivery, error) { return nil, nil }
func (d *deleter) ChangeVisibility(context.Context, ChangeVisibilityParams) error {
	return nil
}

func (d *deleter) Delete(_ context.Context, h string) error {
	d.deletes = append(d.deletes, h)
	switch {
	case h == d.broken:
		return errBroken
	case !d.live[h]:
		return ErrInvalidReceipt
	}
	delete(d.live, h)
	return nil
}

// batchDeleter is a deleter with DeleteBatch, which records its calls.
type batchDeleter struct {
	deleter
	batches [][]string
}

func (b *batchDeleter) DeleteBatch(_ context.Context, handles []string) error {
	b.batches = append(b.batches, handles)
	return nil
}

func TestDeleteAll(t *testing.T) {
	t.Parallel()
	t.Run("one by one", func(t *testing.T) {
		t.Parallel()
		d := &deleter{live: map[string]bool{"a": true, "b": true, "c": true}, broken: "c"}
		err := DeleteAll(t.Context(), d, []string{"a", "stale", "b", "c"})
		var be *BatchError
		require.ErrorAs(t, err, &be)
		require.Len(t, be.Failed, 2)
		require.Equal(t, "stale", be.Failed[0].ID)
		require.ErrorIs(t, be.Failed[0].Err, ErrInvalidReceipt)
		require.Equal(t, "c", be.Failed[1].ID)
		require.ErrorIs(t, be.Failed[1].Err, errBroken)
		require.Equal(t, []string{"a", "stale", "b", "c"}, d.deletes, "every handle tried, in order")
		require.False(t, d.live["a"] || d.live["b"], "a and b deleted")
	})
	t.Run("all deleted", func(t *testing.T) {
		t.Parallel()
		d := &deleter{live: map[string]bool{"a": true, "b": true}}
		require.NoError(t, DeleteAll(t.Context(), d, []string{"a", "b"}))
		require.Empty(t, d.live)
	})
	t.Run("batch deleter", func(t *testing.T) {
		t.Parallel()
		b := &batchDeleter{}
		require.NoError(t, DeleteAll(t.Context(), b, []string{"a", "b"}))
		require.Equal(t, [][]string{{"a", "b"}}, b.batches)
		require.Empty(t, b.deletes, "no Delete when DeleteBatch is there")
	})
	t.Run("nothing to delete", func(t *testing.T) {
		t.Parallel()
		b := &batchDeleter{}
		require.NoError(t, DeleteAll(t.Context(), b, nil))
		require.Empty(t, b.batches)
	})
	t.Run("limits", func(t *testing.T) {
		t.Parallel()
		d := &deleter{live: map[string]bool{"a": true}}
		require.ErrorIs(t, DeleteAll(t.Context(), d, []string{"a", "a"}), ErrBatchTooLarge)
		require.Empty(t, d.deletes, "nothing deleted")
	})
}
