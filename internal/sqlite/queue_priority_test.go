package sqlite

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/queue"
)

func fill(t *testing.T, q *Queue, prefix string, n int) {
	t.Helper()
	for lo := 0; lo < n; lo += queue.MaxBatch {
		var msgs []queue.Message
		for i := lo; i < min(n, lo+queue.MaxBatch); i++ {
			msgs = append(msgs, queue.Message{ID: fmt.Sprint(i), Body: []byte(fmt.Sprintf("%s-%d", prefix, i))})
		}
		if err := q.SendBatch(t.Context(), msgs); err != nil {
			t.Fatal(err)
		}
	}
}

// A flood of high-class messages queued with low-class ones: the high
// class is served first, and the low class gets at least (loosely) its
// share of the messages done while both are backlogged.
func TestPriorityServesTheLowClassItsShare(t *testing.T) {
	db := openQueueTestDB(t)
	high, low := openTestQueue(t, db, "urgent", nil), openTestQueue(t, db, "bulk", nil)
	const share = 0.25
	p, err := queue.NewPriority(queue.Class{Receiver: high, Share: 1 - share}, queue.Class{Receiver: low, Share: share})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, high, "high", 1000)
	fill(t, low, "low", 300)
	done := map[int]int{}
	for round := 0; ; round++ {
		ds, err := p.Receive(t.Context(), queue.ReceiveParams{Max: 10, Visibility: time.Minute, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			t.Fatal("both classes backlogged, nothing received")
		}
		i, _, err := p.Class(ds[0].ReceiptHandle)
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 && i != 0 {
			t.Fatalf("first batch from class %d, want the high class first", i)
		}
		for _, d := range ds {
			if err := p.Delete(t.Context(), d.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
		}
		done[i] += len(ds)
		if done[0] >= 1000 || done[1] >= 300 {
			break // one class is no longer backlogged
		}
	}
	got := float64(done[1]) / float64(done[0]+done[1])
	t.Logf("while both were backlogged: high %d, low %d (low share %.3f, configured %.2f)", done[0], done[1], got, share)
	if got < 0.8*share {
		t.Fatalf("low class share %.3f, want at least %.3f", got, 0.8*share)
	}
	if got > 1.5*share {
		t.Fatalf("low class share %.3f: the high class was not served first (configured low share %.2f)", got, share)
	}
	// The low class alone is drained; an empty class banks no credit, so
	// the high class's new work goes first again.
	for {
		ds, err := p.Receive(t.Context(), queue.ReceiveParams{Max: 10, Visibility: time.Minute, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			if err := p.Delete(t.Context(), d.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill(t, low, "low2", 50)
	fill(t, high, "high2", 50)
	ds, err := p.Receive(t.Context(), queue.ReceiveParams{Max: 10, Visibility: time.Minute, Now: time.Now()})
	if err != nil || len(ds) == 0 {
		t.Fatal(err, len(ds))
	}
	if i, _, _ := p.Class(ds[0].ReceiptHandle); i != 0 {
		t.Fatalf("after the classes emptied, first batch from class %d, want the high class", i)
	}
	if err := p.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: ds[0].ReceiptHandle, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(t.Context(), "9:x"); err != queue.ErrInvalidReceipt {
		t.Fatalf("delete of an unknown class's handle: %v", err)
	}
	// A batch delete goes to the batch's class; a handle of no class fails
	// alone, by the handle given.
	handles := []string{"9:x"}
	ds = ds[:min(len(ds), queue.MaxBatch-1)]
	for _, d := range ds {
		handles = append(handles, d.ReceiptHandle)
	}
	err = queue.DeleteAll(t.Context(), p, handles)
	var be *queue.BatchError
	if !errors.As(err, &be) || len(be.Failed) != 1 || be.Failed[0].ID != "9:x" || !errors.Is(be.Failed[0].Err, queue.ErrInvalidReceipt) {
		t.Fatalf("batch delete with one unknown handle: %v", err)
	}
	for _, d := range ds {
		if err := p.Delete(t.Context(), d.ReceiptHandle); !errors.Is(err, queue.ErrInvalidReceipt) {
			t.Fatalf("delete after the batch delete: %v, want the message gone", err)
		}
	}
}
