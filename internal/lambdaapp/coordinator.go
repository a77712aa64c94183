package lambdaapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/emf"
	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/lease"
)

// ErrIncomplete is matched by the coordinator handler's error when the
// fan-out stopped before its end (deadline or budget). The run stays
// resumable; the error makes Lambda's asynchronous retry resume it.
var ErrIncomplete = errors.New("fan-out incomplete")

// CoordinatorHandler is the coordinator function's handler.
type CoordinatorHandler struct {
	p    HandlerParams
	core coordinator.Coordinator // Owner and Logger set per invocation
	name string
	emf  *emf.Writer
	cold coldStart
}

// NewCoordinatorHandler returns the handler working on p. It checks that p
// has the stores the coordinator needs and that p.Job is in p.Jobs.
func NewCoordinatorHandler(p HandlerParams) (*CoordinatorHandler, error) {
	if err := p.validate(Coordinator); err != nil {
		return nil, err
	}
	if p.TriggerSkew == 0 {
		p.TriggerSkew = DefaultTriggerSkew
	}
	return &CoordinatorHandler{
		p: p,
		core: coordinator.Coordinator{
			// Every path to the coordinator (Lambda, baton invoke, replay
			// event) records refused acquisitions for operators.
			Leases: lease.Counting(p.Leases, p.logger()), Ledger: p.Ledger, Queue: p.router(), Jobs: p.Jobs, NowFunc: p.NowFunc,
			Classes: p.JobQueues, Telemetry: p.Telemetry,
		},
		name: p.functionName(Coordinator),
		emf:  p.metrics(),
	}, nil
}

// CoordinatorResponse is the coordinator function's result.
type CoordinatorResponse struct {
	Job     string    `json:"job"`
	Source  string    `json:"source"` // rule, scheduler or replay
	Force   bool      `json:"force,omitempty"`
	Run     string    `json:"run,omitempty"` // empty when skipped
	Nominal time.Time `json:"nominal"`
	// Outcome is opened, resumed, already_fanned_out or skipped.
	Outcome  string `json:"outcome"`
	Enqueued int    `json:"enqueued"`
	Cursor   int    `json:"cursor"`
	Total    int    `json:"total"`
	Fence    int64  `json:"fence,omitempty"`
	// Holder is the live lease holder when skipped.
	Holder  *Holder `json:"holder,omitempty"`
	Stopped string  `json:"stopped,omitempty"`
	// Deduped is set for a submission whose dedupe key found its run.
	Deduped bool `json:"deduped,omitempty"`
	// PayloadDiffers is set with Deduped when the submission's items
	// differ from those its key's run was opened with: they were not used.
	PayloadDiffers   bool    `json:"payload_differs,omitempty"`
	AcquireLatencyMS float64 `json:"acquire_latency_ms"`
	DurationMS       float64 `json:"duration_ms"`
	RequestID        string  `json:"request_id"`
}

// Holder is a lease holder as reported in a response.
type Holder struct {
	Owner     string    `json:"owner"`
	ExpiresAt time.Time `json:"expires_at"`
	Fence     int64     `json:"fence"`
}

// Handle runs one trigger. payload is the raw event (lambdaevent.DecodeTrigger).
func (h *CoordinatorHandler) Handle(ctx context.Context, payload json.RawMessage) (CoordinatorResponse, error) {
	ctx = xrayParent(ctx)
	now := h.now()
	inv := invocationOf(ctx, h.name, h.p, &h.cold, now)
	inv.coldStartMetric(ctx, h.emf, now)
	if lambdaevent.IsSubmission(payload) {
		return h.submit(ctx, inv, payload)
	}
	tr, err := lambdaevent.DecodeTrigger(lambdaevent.TriggerParams{
		Payload: payload, Jobs: h.p.Jobs.Names(), Unscheduled: lambdaevent.Unscheduled(h.p.Jobs), Now: now, Skew: h.p.TriggerSkew, MaxAge: h.p.TriggerAge,
	})
	if err != nil {
		inv.log.ErrorContext(ctx, "trigger rejected", slog.String("phase", "decode"), slog.Any("error", err))
		return CoordinatorResponse{}, err
	}
	log := inv.log.With(slog.String("job", tr.Job))
	log.InfoContext(ctx, "trigger", slog.String("phase", "decode"), slog.String("source", string(tr.Source)),
		slog.Time("at", tr.At), slog.Bool("force", tr.Force), slog.String("event_id", tr.EventID),
		slog.Any("resources", tr.Resources), slog.Time("deadline", inv.deadline))

	c := h.core
	c.Owner, c.Logger = inv.owner, inv.log // the core adds the job
	sum, runErr := c.Run(ctx, coordinator.Trigger{Job: tr.Job, At: tr.At, Force: tr.Force, Deadline: inv.deadline})

	resp := CoordinatorResponse{
		Job: tr.Job, Source: string(tr.Source), Force: tr.Force, Nominal: sum.Nominal,
		Outcome: string(sum.Outcome), Enqueued: sum.Enqueued, Cursor: sum.Cursor, Total: sum.Total,
		Fence: sum.Fence, Stopped: sum.Stopped, AcquireLatencyMS: ms(sum.AcquireLatency),
		DurationMS: ms(sum.Duration), RequestID: inv.requestID,
	}
	if sum.Run.Job != "" {
		resp.Run = sum.Run.String()
	}
	if sum.Holder != nil {
		resp.Holder = &Holder{Owner: sum.Holder.Owner, ExpiresAt: sum.Holder.ExpiresAt, Fence: sum.Holder.Fence}
	}
	h.metrics(ctx, inv, tr, sum, runErr)

	if runErr != nil {
		log.ErrorContext(ctx, "coordinator failed", slog.String("phase", "run"), slog.Any("error", runErr))
		return CoordinatorResponse{}, runErr
	}
	if sum.Outcome == coordinator.OutcomeSkipped && sum.Pending {
		// The holder is busy with another tick: fail so that the trigger is
		// retried (Lambda's asynchronous retries, the scheduler's retry
		// policy) instead of dropping this tick.
		err := fmt.Errorf("%w: tick %s not run yet: lease held by %s until %s; a retry runs it",
			ErrIncomplete, sum.Nominal.Format(time.RFC3339), sum.Holder.Owner, sum.Holder.ExpiresAt.Format(time.RFC3339Nano))
		log.WarnContext(ctx, "tick pending behind the lease", slog.String("phase", "acquire"), slog.Any("error", err))
		return CoordinatorResponse{}, err
	}
	if sum.Stopped != "" {
		err := fmt.Errorf("%w: run %s stopped (%s) at %d of %d assets; a retry resumes it",
			ErrIncomplete, sum.Run, sum.Stopped, sum.Cursor, sum.Total)
		log.WarnContext(ctx, "fan-out incomplete", slog.String("phase", "fan-out"), slog.Any("error", err))
		return CoordinatorResponse{}, err
	}
	return resp, nil
}

func (h *CoordinatorHandler) metrics(ctx context.Context, inv invocation, tr lambdaevent.Trigger, sum coordinator.Summary, runErr error) {
	contention, opened := 0.0, 0.0
	switch sum.Outcome {
	case coordinator.OutcomeSkipped:
		contention = 1
	case coordinator.OutcomeOpened:
		opened = 1
	}
	props := map[string]any{"source": string(tr.Source), "outcome": string(sum.Outcome)}
	if sum.Run.Job != "" {
		props["run"] = sum.Run.String()
	}
	metrics := []emf.Metric{
		{Name: "LeaseContention", Unit: emf.Count, Values: []float64{contention}},
		// One per run (or generation) opened, 0 on every other outcome: the
		// stack's alarm on ticks that stop coming counts them, treating
		// missing data as breaching.
		{Name: "RunsOpened", Unit: emf.Count, Values: []float64{opened}},
		{Name: "ItemsEnqueued", Unit: emf.Count, Values: []float64{float64(sum.Enqueued)}},
		{Name: "CoordinatorDuration", Unit: emf.Milliseconds, Values: []float64{ms(sum.Duration)}},
	}
	if sum.AcquireLatency > 0 || runErr == nil {
		metrics = append(metrics, emf.Metric{Name: "AcquireLatency", Unit: emf.Milliseconds, Values: []float64{ms(sum.AcquireLatency)}})
	}
	if runErr != nil {
		metrics = append(metrics, emf.Metric{Name: "CoordinatorErrors", Unit: emf.Count, Values: []float64{1}})
	}
	inv.emit(ctx, h.emf, h.now(), tr.Job, props, metrics...)
}

func (h *CoordinatorHandler) now() time.Time {
	if h.p.NowFunc != nil {
		return h.p.NowFunc()
	}
	return time.Now()
}

// submit runs one submission event (lambdaevent.DecodeSubmission): its
// run is opened and fanned out, or found by its dedupe key. The response
// says which (Outcome already_fanned_out with Deduped); a bad submission
// is an error naming what is wrong, never quoting a payload.
func (h *CoordinatorHandler) submit(ctx context.Context, inv invocation, payload []byte) (CoordinatorResponse, error) {
	s, err := lambdaevent.DecodeSubmission(payload, h.p.Jobs.Names())
	if err != nil {
		inv.log.ErrorContext(ctx, "submission rejected", slog.String("phase", "decode"), slog.Any("error", err))
		return CoordinatorResponse{}, err
	}
	log := inv.log.With(slog.String("job", s.Job), slog.String("submission", s.Key))
	log.InfoContext(ctx, "submission", slog.String("phase", "decode"), slog.Int("items", len(s.Items)), slog.Time("deadline", inv.deadline))
	c := h.core
	c.Owner, c.Logger = inv.owner, inv.log
	sum, err := c.Submit(ctx, coordinator.Submission{Job: s.Job, Key: s.Key, Class: s.Class, Items: s.Items, Deadline: inv.deadline})
	resp := CoordinatorResponse{
		Job: s.Job, Source: "submission", Outcome: string(sum.Outcome), Deduped: sum.Deduped, PayloadDiffers: sum.PayloadDiffers,
		Enqueued: sum.Enqueued, Cursor: sum.Cursor, Total: sum.Total, Fence: sum.Fence, Stopped: sum.Stopped,
		DurationMS: ms(sum.Duration), RequestID: inv.requestID,
	}
	if sum.Run.Job != "" {
		resp.Run = sum.Run.String()
	}
	switch {
	case err != nil:
		log.ErrorContext(ctx, "submission failed", slog.String("phase", "run"), slog.Any("error", err))
		return CoordinatorResponse{}, err
	case sum.Outcome == coordinator.OutcomeSkipped && !sum.Deduped:
		err := fmt.Errorf("%w: submission %s+%s is being opened by another invocation; a retry finds it", ErrIncomplete, s.Job, s.Key)
		log.WarnContext(ctx, "submission pending behind its lease", slog.String("phase", "acquire"), slog.Any("error", err))
		return CoordinatorResponse{}, err
	case sum.Stopped != "":
		err := fmt.Errorf("%w: run %s stopped (%s) at %d; a retry of the same submission resumes it", ErrIncomplete, sum.Run, sum.Stopped, sum.Cursor)
		log.WarnContext(ctx, "fan-out incomplete", slog.String("phase", "fan-out"), slog.Any("error", err))
		return CoordinatorResponse{}, err
	}
	return resp, nil
}
