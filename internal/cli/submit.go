package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/ledger"
)

const submitSynopsis = `submit --key K --items FILE|- [--class C] [--wait D] [flags]

Submits work for the job on demand: the items in FILE (or on stdin with
-), a JSON array of {"name": …, "payload": <any JSON value>} or
{"name": …, "payload_base64": "…"} (the "items" of a submission event,
see events/coordinator-submit.json), under the dedupe key K. It opens the
run job+K#1, stores the items with their payloads and enqueues one
message per item; consumers (baton run, the consumer function) process
them like a tick's.

The same key submitted again within the job's retention opens nothing
and prints the existing run with "deduped"; past the retention it opens
the key's next generation. When the items (names or payloads) differ
from those the existing run was opened with, it says so: the new items
were not used ("payload_differs": true with --json). A submission that
finds another caller opening the same key waits for it (a few seconds
at most) and prints its run. A bad file is refused (exit status 2) with
the item and what is wrong; payloads are never printed.

--class C sends the items to the job queue C of the catalog (a priority
class, baton.JobQueue) instead of the job's own queue: that class's
consumers, at its concurrency share, serve them.

With --wait the command waits up to D for the run to finish and exits
with status 1 if it ends partial (some item DEAD or CANCELLED) or is not
finished in time. While it waits it runs --consumers consumers in its own
process (4 by default on the embedded store and PostgreSQL, none on AWS,
whose deployed consumers take the messages), so that a run is processed
with no worker running; beside a running 'baton run' or 'serve' they share
the work (claims are per item).`

func submitCommand() command {
	return command{synopsis: submitSynopsis, summary: "submit work on demand: items with payloads under a dedupe key",
		example: "  baton submit --job fx --key desk-42 --items items.json\n  cat items.json | baton submit --job fx --key desk-42 --items - --wait 1m --json",
		backend: true, defineFunc: defineSubmit}
}

func defineSubmit(e *env, fs *pflag.FlagSet) runFunc {
	var key, items, class string
	var wait time.Duration
	fs.StringVar(&key, "key", "", "the dedupe key (letters, digits, '_', '.', '-'; at most 64)")
	fs.StringVar(&class, "class", "", "the priority class: a job queue of the catalog, whose consumers serve the items (default: the job's queue)")
	fs.StringVar(&items, "items", "", "the items: a JSON array in a file, or - for stdin")
	fs.DurationVar(&wait, "wait", 0, "wait up to this long for the run to finish (0: do not wait)")
	consumers := fs.Int("consumers", -1, "with --wait: consumers run in this process while waiting (default 4 on sqlite and postgres, 0 on aws)")
	return func(ctx context.Context, _ []string) error {
		return submit(ctx, e, key, items, class, wait, *consumers)
	}
}

// submit's JSON report: run (the run opened or found), items (the number
// submitted), existing (the dedupe key found an earlier submission's run),
// payload_differs (with existing: the items differ from those that run was
// opened with, and were not used), enqueued, and with --wait the run's state and counts (run_state,
// succeeded, dead, cancelled).
func submit(ctx context.Context, e *env, key, items, class string, wait time.Duration, consumers int) error {
	common := &e.backend
	j, err := lookupJob(e.catalog, common.job)
	if err != nil {
		return err
	}
	if key == "" {
		return usagef("--key is required")
	}
	if items == "" {
		return usagef("--items is required (a file, or - for stdin)")
	}
	var raw []byte
	if items == "-" {
		raw, err = io.ReadAll(io.LimitReader(os.Stdin, 512<<20))
	} else {
		raw, err = os.ReadFile(items)
	}
	if err != nil {
		return usagef("--items: %v", err)
	}
	list, err := lambdaevent.DecodeItems(raw)
	if err != nil {
		return usagef("--items %s: %v", items, err)
	}
	b, err := common.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if consumers < 0 {
		consumers = defaultReplayConsumers(b.Name)
	}
	eng, err := exec.New(b, exec.Options{Catalog: e.catalog, Owner: operatorOwner(), Consumers: max(consumers, 1),
		Telemetry: e.telemetry(b.Name, nil)})
	if err != nil {
		return err
	}
	sum, err := eng.Coordinator.Submit(ctx, coordinator.Submission{Job: j.Name, Key: key, Class: class, Items: list})
	if errors.Is(err, coordinator.ErrSubmission) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	if sum.Outcome == coordinator.OutcomeSkipped && !sum.Deduped {
		return fmt.Errorf("submission %s+%s is being opened by another caller (lease held by %s): run the command again", j.Name, key, sum.Holder.Owner)
	}
	e.set("run", sum.Run.String())
	e.set("items", len(list))
	e.set("existing", sum.Deduped)
	e.set("payload_differs", sum.PayloadDiffers)
	e.set("enqueued", sum.Enqueued)
	switch {
	case sum.Deduped && sum.Outcome == coordinator.OutcomeSkipped && sum.Holder != nil:
		e.sayf("deduped: the key's run is %s, being fanned out by another caller (%s), %d messages enqueued\n", sum.Run, sum.Holder.Owner, sum.Enqueued)
	case sum.Deduped:
		e.sayf("deduped: the key's run is %s, %d messages enqueued\n", sum.Run, sum.Enqueued)
	default:
		e.sayf("opened %s, %d messages enqueued\n", sum.Run, sum.Enqueued)
	}
	if sum.PayloadDiffers {
		e.sayf("note: these items differ from those the key's run was opened with; they were not used (submit them under a new key)\n")
	}
	if wait <= 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if consumers > 0 {
		cctx, stop := context.WithCancel(wctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = eng.Consume(cctx) }()
		defer func() { stop(); <-done }()
	}
	run, err := waitRun(wctx, b.Ledger, sum.Run)
	e.set("run_state", string(run.State))
	e.set("succeeded", run.Succeeded)
	e.set("dead", run.Dead)
	e.set("cancelled", run.Cancelled)
	if err != nil {
		e.sayf("run %s is %s after %s: not finished\n", sum.Run, run.State, wait)
		return errFailed
	}
	e.sayf("run %s is %s: %d succeeded, %d dead, %d cancelled\n", sum.Run, run.State, run.Succeeded, run.Dead, run.Cancelled)
	if run.State != ledger.RunComplete {
		return errFailed
	}
	return nil
}

// waitRun polls the run until it is finished or ctx ends.
func waitRun(ctx context.Context, l ledger.Store, id ledger.RunID) (ledger.Run, error) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		run, err := ledger.GetRunOf(ctx, l, id)
		if err == nil && run.State.Finished() {
			return run, nil
		}
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-t.C:
		}
	}
}
