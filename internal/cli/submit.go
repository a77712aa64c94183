package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/engine"
	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/ledger"
)

const submitSynopsis = `submit --key K --items FILE|- [--wait D] [--json] [flags]

Submits work for the job on demand: the items in FILE (or on stdin with
-), a JSON array of {"name": …, "payload": <any JSON value>} or
{"name": …, "payload_base64": "…"} (the "items" of a submission event,
see events/coordinator-submit.json), under the dedupe key K. It opens the
run job+K#1, stores the items with their payloads and enqueues one
message per item; consumers (baton run, the consumer function) process
them like a tick's.

The same key submitted again within the job's retention opens nothing
and prints the existing run with "deduped"; past the retention it opens
the key's next generation. A bad file is refused (exit status 2) with
the item and what is wrong; payloads are never printed.

With --wait the command waits up to D for the run to finish and exits
with status 1 if it ends partial (some item DEAD or CANCELLED) or is not
finished in time.`

// submitReport is submit's --json output.
type submitReport struct {
	Run      string `json:"run"`
	Deduped  bool   `json:"deduped"`
	Enqueued int    `json:"enqueued"`
	// State and the counts are set with --wait.
	State     string `json:"state,omitempty"`
	Succeeded int    `json:"succeeded,omitempty"`
	Dead      int    `json:"dead,omitempty"`
	Cancelled int    `json:"cancelled,omitempty"`
}

func submitCmd(ctx context.Context, e *env, args []string) error {
	var (
		common     backendFlags
		key, items string
		wait       time.Duration
		asJSON     bool
	)
	fs := newFlagSet(e, "submit", submitSynopsis)
	common.register(fs)
	fs.StringVar(&key, "key", "", "the dedupe key (letters, digits, '_', '.', '-'; at most 64)")
	fs.StringVar(&items, "items", "", "the items: a JSON array in a file, or - for stdin")
	fs.DurationVar(&wait, "wait", 0, "wait up to this long for the run to finish (0: do not wait)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
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
	eng, err := engine.New(b, engine.Options{Catalog: e.catalog, Owner: operatorOwner()})
	if err != nil {
		return err
	}
	sum, err := eng.Coordinator.Submit(ctx, coordinator.Submission{Job: j.Name, Key: key, Items: list})
	if errors.Is(err, coordinator.ErrSubmission) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	if sum.Outcome == coordinator.OutcomeSkipped {
		return fmt.Errorf("submission %s+%s is being opened by another caller (lease held by %s): run the command again", j.Name, key, sum.Holder.Owner)
	}
	rep := submitReport{Run: sum.Run.String(), Deduped: sum.Deduped, Enqueued: sum.Enqueued}
	var failed error
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		run, err := waitRun(wctx, b.Ledger, sum.Run)
		rep.State, rep.Succeeded, rep.Dead, rep.Cancelled = string(run.State), run.Succeeded, run.Dead, run.Cancelled
		switch {
		case err != nil:
			failed = fmt.Errorf("run %s not finished after %s: %w", sum.Run, wait, errFailed)
		case run.State != ledger.RunComplete:
			failed = errFailed
		}
	}
	if asJSON {
		if err := json.NewEncoder(e.stdout).Encode(rep); err != nil {
			return err
		}
		return failed
	}
	verb := "opened"
	if rep.Deduped {
		verb = "deduped: the key's run is"
	}
	fmt.Fprintf(e.stdout, "%s %s, %d messages enqueued\n", verb, rep.Run, rep.Enqueued)
	if rep.State != "" {
		fmt.Fprintf(e.stdout, "run %s is %s: %d succeeded, %d dead, %d cancelled\n", rep.Run, rep.State, rep.Succeeded, rep.Dead, rep.Cancelled)
	}
	return failed
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
