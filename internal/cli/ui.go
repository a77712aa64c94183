package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/ops"
	"github.com/batonhq/baton/internal/runstatus"
	"github.com/batonhq/baton/internal/ui"
)

const uiSynopsis = `ui [--listen A] [--read-only] [flags]

Serves a web dashboard of the backend's jobs from this binary (nothing to
install): the jobs with their schedules and next ticks; a job's runs
(state, item counts, tick to done), the ticks without a run and each
asset's staleness over the recent runs; a run's timeline, one bar per item
from enqueue to claim to done, attempts and failures marked, derived items
after their inputs; the coordinator's lease (holder, fence, expiry,
contention); the dead-letter queue with each message's reason and what a
redrive would do with it. Pages of work in flight refresh themselves.
Submissions show with their job (its recent dedupe keys, each run's state
and counts) and have timelines like ticks'; a paused job shows as paused
with its reason. The items of a submission or a run-time list are read a
few stored pages at a time (256 items per page of the dashboard).

Actions (replay a tick or an item, redrive, cancel, release an expired
lease) show what they will do on a confirmation page first, then perform
the same operations as this CLI's commands, with their guards (replays
wait for their run like 'baton replay' does, up to --action-timeout, with
consumers in this process on sqlite and postgres). What the CLI refuses
is not offered: a submission has no tick to replay, and the items of a
submission or a run-time list are not named one by one. They refuse
cross-origin requests and need the browser session's token; --read-only
hides them.

The dashboard listens on loopback (--listen, default 127.0.0.1:8700) and
serves only requests addressed to a loopback name. Listening anywhere else
needs both --allow-remote and an access token ($BATON_UI_TOKEN, at least
16 characters): open the dashboard once with ?token=<token>, or send
"Authorization: Bearer <token>". Serve it behind TLS when it leaves the
machine.`

// envUIToken is the variable the dashboard's access token comes from.
const envUIToken = "BATON_UI_TOKEN"

type uiFlags struct {
	common        *backendFlags
	listen        string
	allowRemote   bool
	readOnly      bool
	runs          int
	actionTimeout time.Duration
	refresh       time.Duration
	logLevel      string
	traceURL      string
}

func uiCommand() command {
	return command{synopsis: uiSynopsis, summary: "serve a web dashboard: runs, timelines, staleness, lease, dead letters, actions",
		example: "  baton ui\n  baton ui --read-only --listen 127.0.0.1:0 --json\n  BATON_UI_TOKEN=… baton ui --listen :8700 --allow-remote --backend aws",
		backend: true, streams: true, defineFunc: defineUI}
}

func defineUI(e *env, fs *pflag.FlagSet) runFunc {
	f := uiFlags{common: &e.backend}
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8700", "address to listen on (port 0: any free port)")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow --listen off loopback (needs $"+envUIToken+")")
	fs.BoolVar(&f.readOnly, "read-only", false, "show no actions and refuse them")
	fs.IntVar(&f.runs, "runs", 20, "runs listed per job, and the window of the staleness chart")
	fs.DurationVar(&f.actionTimeout, "action-timeout", 2*time.Minute, "how long a replay from the dashboard waits for its run to settle")
	fs.DurationVar(&f.refresh, "refresh", 2*time.Second, "how often a page of work in flight refreshes")
	fs.StringVar(&f.logLevel, "log", "info", "log level on stderr: debug, info, warn, error")
	fs.StringVar(&f.traceURL, "trace-url", "", "link each run's trace id to your tracing backend: a URL with "+ui.TraceIDPlaceholder+" where the id goes, e.g. 'https://tracing.example/trace/"+ui.TraceIDPlaceholder+"' (default: the id as text)")
	return func(ctx context.Context, _ []string) error { return serveUI(ctx, e, &f) }
}

// uiReport is what ui prints when it starts and stops (--json: a line each).
type uiReport struct {
	Event   string `json:"event"` // serving or stopped
	URL     string `json:"url"`
	Backend string `json:"backend"`
	Store   string `json:"store"`
	Mode    string `json:"mode"`
}

func serveUI(ctx context.Context, e *env, f *uiFlags) error {
	// Read after parsing, so that --help never prints it.
	token := os.Getenv(envUIToken)
	switch {
	case f.runs < 1:
		return usagef("--runs must be at least 1, got %d", f.runs)
	case f.actionTimeout <= 0 || f.refresh <= 0:
		return usagef("--action-timeout and --refresh must be positive")
	case token != "" && len(token) < 16:
		return usagef("$%s is too short: use at least 16 random characters", envUIToken)
	}
	if err := ui.CheckTraceURL(f.traceURL); err != nil {
		return usagef("--trace-url: %v", err)
	}
	loopback, err := loopbackAddr(f.listen)
	if err != nil {
		return usagef("--listen %s: %v", f.listen, err)
	}
	if !loopback && (!f.allowRemote || token == "") {
		return usagef("--listen %s is not loopback: the dashboard acts on your jobs, so listening there needs --allow-remote and an access token in $%s", f.listen, envUIToken)
	}
	logger, err := e.newLogger(f.logLevel)
	if err != nil {
		return err
	}
	if f.common.job != "" {
		if _, err := lookupJob(e.catalog, f.common.job); err != nil {
			return err
		}
	}
	b, err := f.common.openReadOnly(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	op := &uiOperator{catalog: e.catalog, b: b, actor: &ui.Actor{
		Catalog: e.catalog, OpenFunc: f.common.open, Owner: "ui:" + operatorOwner(),
		Consumers: defaultReplayConsumers(b.Name), Timeout: f.actionTimeout, Logger: logger,
	}}
	srv, err := ui.New(ui.Options{
		Catalog: e.catalog, Backend: b, Operator: op, ReadOnly: f.readOnly, AccessToken: token,
		Runs: f.runs, Refresh: f.refresh, Logger: logger, TraceURL: f.traceURL,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	mode := "actions behind a confirmation"
	if f.readOnly {
		mode = "read-only"
	}
	host := ln.Addr().String()
	report := uiReport{Event: "serving", URL: "http://" + host + "/", Backend: b.Name, Store: f.common.where(), Mode: mode}
	if e.json {
		_ = json.NewEncoder(e.stdout).Encode(report)
	} else {
		fmt.Fprintf(e.stdout, "%s ui: serving http://%s/ (backend %s, %s; %s)\n", e.prog, host, b.Name, f.common.where(), mode)
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return err
	}
	if e.json {
		report.Event = "stopped"
		_ = json.NewEncoder(e.stdout).Encode(report)
	} else {
		fmt.Fprintf(e.stdout, "%s ui: stopped\n", e.prog)
	}
	return nil
}

// loopbackAddr reports whether the listen address addr is on loopback
// only; an empty host (every interface) is not.
func loopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// uiOperator answers the dashboard's questions that only the CLI knows
// how to compute (the ticks without a run) and performs its actions with
// a ui.Actor: the operator's calls of package ops, the CLI's guards.
type uiOperator struct {
	catalog *baton.Catalog
	b       backend.Backend
	actor   *ui.Actor
}

var _ ui.Operator = (*uiOperator)(nil)

// Do performs a (ui.Actor.Do).
func (o *uiOperator) Do(ctx context.Context, a ui.Action) ui.Outcome { return o.actor.Do(ctx, a) }

// DeadLetters lists the dead-letter queue as 'baton dlq list' does.
func (o *uiOperator) DeadLetters(ctx context.Context, limit int) ([]ui.DeadLetter, error) {
	op, err := ops.New(o.b, o.catalog, &ops.Options{Owner: operatorOwner()})
	if err != nil {
		return nil, err
	}
	rows, err := op.DeadLetters(ctx, limit)
	out := make([]ui.DeadLetter, 0, len(rows))
	for _, d := range rows {
		out = append(out, ui.DeadLetter{
			MessageID: d.MessageID, Key: d.Key, Malformed: d.Malformed, ItemState: d.ItemState, Attempts: d.Attempts,
			ReceiveCount: d.ReceiveCount, LastError: d.LastError, SentAt: d.SentAt, OnRedrive: d.OnRedrive,
		})
	}
	return out, err
}

// MissedTicks are the ticks 'baton status' lists as without a run.
func (o *uiOperator) MissedTicks(j baton.Job, runs []ledger.Run, now time.Time) []ui.MissedTick {
	pause, _ := runstatus.ReadPause(context.Background(), o.b, j.Name) // none when unreadable: gaps show as missed
	gaps := runstatus.TickGaps(j, runs, pause, now)
	out := make([]ui.MissedTick, len(gaps))
	for i, g := range gaps {
		out[i] = ui.MissedTick{Tick: g.Tick, Reason: g.Reason}
	}
	return out
}
