package cli

import (
	"time"

	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/runstatus"
)

// The --json reports of the commands that run ticks and items (run --once,
// replay, cancel, dlq redrive, lease release, …) share one shape: an
// object with "command", "ok" (false when the exit status is not 0),
// "messages" (the lines the text form prints), "error" when the command
// failed with one, and the command's data in the fields below. Commands
// still to come (such as submit) follow the same contract.

// summaryReport is the coordinator's summary of one invocation.
type summaryReport struct {
	Job      string     `json:"job"`
	Tick     time.Time  `json:"tick"`
	Outcome  string     `json:"outcome"`
	Run      string     `json:"run,omitempty"`
	Fence    int64      `json:"fence,omitempty"`
	Enqueued int        `json:"enqueued"`
	Cursor   int        `json:"cursor"`
	Total    int        `json:"total"`
	Stopped  string     `json:"stopped,omitempty"`
	Holder   string     `json:"holder,omitempty"`
	HeldTill *time.Time `json:"holder_expires_at,omitempty"`
	MS       float64    `json:"duration_ms"`
}

func newSummaryReport(s coordinator.Summary) summaryReport {
	r := summaryReport{Job: s.Job, Tick: s.Nominal.UTC(), Outcome: string(s.Outcome), Fence: s.Fence, Enqueued: s.Enqueued,
		Cursor: s.Cursor, Total: s.Total, Stopped: s.Stopped, MS: ms(s.Duration)}
	if s.Run.Generation > 0 {
		r.Run = s.Run.String()
	}
	if s.Holder != nil {
		r.Holder, r.HeldTill = s.Holder.Owner, opt(s.Holder.ExpiresAt)
	}
	return r
}

// ms is d in milliseconds, as every duration of a report or a log.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// reportSummary prints the coordinator's summary and sets "coordinator".
func (e *env) reportSummary(s coordinator.Summary) {
	printSummary(e.text(), s)
	if e.json {
		e.set("coordinator", newSummaryReport(s))
	}
}

// reportItems prints the item table and sets "items".
func (e *env) reportItems(items []ledger.Item, trigger time.Time) {
	printItems(e.text(), items, trigger)
	if e.json {
		list := make([]itemStatus, len(items))
		for i, it := range items {
			list[i] = runstatus.NewItem(it)
		}
		e.set("items", list)
	}
}

// reportRun prints the run's line and sets "run".
func (e *env) reportRun(r ledger.Run) {
	printRun(e.text(), r)
	if e.json {
		rs := runstatus.NewRun(r, nil, nil)
		rs.Items = map[string]int{string(ledger.ItemSucceeded): r.Succeeded, string(ledger.ItemDead): r.Dead, string(ledger.ItemCancelled): r.Cancelled}
		e.set("run", rs)
	}
}
