package batonclient_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonclient"
)

// openExample opens a client on a fresh embedded store for the examples
// below; close runs the cleanup.
func openExample(ctx context.Context, catalog *baton.Catalog) (client *batonclient.Client, closeFunc func(), err error) {
	dir, err := os.MkdirTemp("", "baton")
	if err != nil {
		return nil, nil, err
	}
	client, err = batonclient.Open(ctx, catalog, &batonclient.Options{Store: filepath.Join(dir, "baton.db"), Owner: "ops-example"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return client, func() { client.Close(); os.RemoveAll(dir) }, nil
}

// work runs the client's consumers until the returned stop is called.
func work(ctx context.Context, client *batonclient.Client) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- client.Work(wctx) }()
	return func() { cancel(); <-done }
}

// Cancel a submission's run before it is worked: its items end
// CANCELLED, and the run settles as partial.
func ExampleClient_Cancel() {
	catalog := baton.MustCatalog(baton.Job{
		Name: "thumbs", Assets: []string{"unused"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) { return nil, nil }),
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, closeClient, err := openExample(ctx, catalog)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeClient()

	sub, err := client.Submit(ctx, "thumbs", "upload-17", []baton.Item{{Name: "img-1"}, {Name: "img-2"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := client.Cancel(ctx, sub.Run, "the upload was withdrawn")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range res.Items {
		fmt.Println(it.Item, it.Was, "->", it.Now)
	}
	fmt.Println("run", res.Run.Run, res.Run.State, "cancelled:", res.Run.Cancelled)
	// Output:
	// img-1 PENDING -> CANCELLED
	// img-2 PENDING -> CANCELLED
	// run thumbs+upload-17#1 partial cancelled: 2
}

// Pause a job: its scheduled ticks are skipped (and a replay of one
// without force is refused) until it is resumed.
func ExampleClient_Pause() {
	catalog := baton.MustCatalog(baton.Job{
		Name: "fx", Schedule: "rate(1 hour)", Assets: []string{"EURUSD"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) { return nil, nil }),
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, closeClient, err := openExample(ctx, catalog)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeClient()

	p, err := client.Pause(ctx, "fx", "provider outage, INC-1234")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("paused:", p.Paused, "changed:", p.Changed, "reason:", p.Reason)
	p, _ = client.Pause(ctx, "fx", "again")
	fmt.Println("paused:", p.Paused, "changed:", p.Changed, "reason:", p.Reason)

	_, err = client.ReplayTick(ctx, "fx", time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), false, 0)
	fmt.Println("replay while paused:", errors.Is(err, batonclient.ErrPaused))

	p, err = client.Resume(ctx, "fx", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("paused:", p.Paused, "changed:", p.Changed, "skipped:", p.Skipped, "by:", p.By)
	// Output:
	// paused: true changed: true reason: provider outage, INC-1234
	// paused: true changed: false reason: provider outage, INC-1234
	// replay while paused: true
	// paused: false changed: true skipped: 1 by: ops-example
}

// Redrive the dead-letter queue back to the work queue: each message
// keeps its idempotency key, so an item done meanwhile is not run again.
func ExampleClient_Redrive() {
	catalog := baton.MustCatalog(baton.Job{
		Name: "fx", Schedule: "rate(1 hour)", Assets: []string{"EURUSD"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) { return nil, nil }),
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, closeClient, err := openExample(ctx, catalog)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeClient()

	res, err := client.Redrive(ctx, 10)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("moved:", res.Moved, "left:", res.Left)
	// Output:
	// moved: 0 left: 0
}

// Release a job's lease: only the holder read with Lease, and never a
// live one unless ForceLive says its holder is known to be dead.
func ExampleClient_ReleaseLease() {
	catalog := baton.MustCatalog(baton.Job{
		Name: "fx", Schedule: "rate(1 hour)", Assets: []string{"EURUSD"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) { return nil, nil }),
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, closeClient, err := openExample(ctx, catalog)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeClient()

	_, err = client.Lease(ctx, "fx")
	fmt.Println("before any run:", errors.Is(err, batonclient.ErrNoLease))

	if _, err := client.ReplayTick(ctx, "fx", time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), false, 0); err != nil {
		fmt.Println(err)
		return
	}
	l, err := client.Lease(ctx, "fx")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("holder %q, fence %d, live %v\n", l.Owner, l.Fence, l.Live)
	res, err := client.ReleaseLease(ctx, "fx", batonclient.ReleaseLeaseParams{Owner: "coordinator-7f3a", Fence: l.Fence})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outcome)
	// Output:
	// before any run: true
	// holder "", fence 1, live false
	// already_free
}

// Replay a tick and one of its items: without force a finished tick or a
// SUCCEEDED item is not run again; with force the tick's next generation
// runs the item again and carries the other items' outcomes over.
func ExampleClient_ReplayItem() {
	var processed atomic.Int64
	catalog := baton.MustCatalog(baton.Job{
		Name: "fx", Schedule: "rate(1 hour)", Assets: []string{"EURUSD", "USDJPY"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			processed.Add(1)
			return []byte("ok"), nil
		}),
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, closeClient, err := openExample(ctx, catalog)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeClient()
	defer work(ctx, client)()

	tick, err := client.ReplayTick(ctx, "fx", time.Date(2026, 11, 21, 12, 30, 0, 0, time.UTC), false, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tick.Outcome, tick.Run, "enqueued:", tick.Enqueued)
	if _, err := client.Wait(ctx, tick.Run, 10*time.Millisecond); err != nil {
		fmt.Println(err)
		return
	}
	again, _ := client.ReplayTick(ctx, "fx", tick.Run.Nominal, false, 0)
	fmt.Println(again.Outcome, again.Run)

	rep, err := client.ReplayItem(ctx, tick.Run, "EURUSD", false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Outcome, rep.Was)
	rep, err = client.ReplayItem(ctx, tick.Run, "EURUSD", true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Outcome, rep.Run, "rerun:", rep.Rerun, "carried:", rep.Carried)
	st, err := client.Wait(ctx, rep.Run, 10*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.State, "processed:", processed.Load())
	// Output:
	// opened fx@2026-11-21T12:00:00Z#1 enqueued: 2
	// already_fanned_out fx@2026-11-21T12:00:00Z#1
	// already_terminal SUCCEEDED
	// new_generation fx@2026-11-21T12:00:00Z#2 rerun: [EURUSD] carried: 1
	// complete processed: 3
}
