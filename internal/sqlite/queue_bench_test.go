package sqlite

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/queue"
)

// BenchmarkQueueSendReceiveDelete sends a batch of 10 messages, receives
// them and deletes each: the embedded queue's part of ten items' trip.
func BenchmarkQueueSendReceiveDelete(b *testing.B) {
	ctx := b.Context()
	db, err := Open(ctx, b.TempDir()+"/bench.db", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	q, err := OpenQueue(ctx, db, "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]queue.Message, queue.MaxBatch)
	for i := range msgs {
		msgs[i] = queue.Message{ID: fmt.Sprint(i), Body: []byte(`{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`),
			Attributes: map[string]string{"baton-key": "fx@2026-11-21T12:01:00Z#1/EURUSD", "baton-fence": "1"}}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := q.SendBatch(ctx, msgs); err != nil {
			b.Fatal(err)
		}
		ds, err := q.Receive(ctx, queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Minute})
		if err != nil || len(ds) != queue.MaxBatch {
			b.Fatalf("received %d: %v", len(ds), err)
		}
		for _, d := range ds {
			if err := q.Delete(ctx, d.ReceiptHandle); err != nil {
				b.Fatal(err)
			}
		}
	}
}
