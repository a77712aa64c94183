package lambdaapp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/batonhq/baton/internal/coordinator"
	"github.com/batonhq/baton/internal/emf"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/lambdaevent"
)

// ErrIncomplete is matched by the coordinator handler's error when the
// fan-out stopped before its end (deadline or budget), or the tick waits
// behind another holder's lease. The run stays resumable; the error makes
// Lambda's asynchronous retry resume it. It is exec.ErrIncomplete, the
// same for every transport.
var ErrIncomplete = exec.ErrIncomplete

// CoordinatorHandler is the coordinator function's handler.
type CoordinatorHandler struct {
	p    HandlerParams
	core coordinator.Coordinator // built once (exec.Core); Owner and Logger set per invocation
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
	name := p.functionName(Coordinator)
	core, err := p.build(Coordinator, name)
	if err != nil {
		return nil, err
	}
	c, err := core.Coordinator(name)
	if err != nil {
		return nil, fmt.Errorf("%s handler: %w", Coordinator, err)
	}
	return &CoordinatorHandler{p: p, core: *c, name: name, emf: p.metrics()}, nil
}

// CoordinatorResponse is the coordinator function's result: the one
// response of every transport (exec.CoordinatorResponse).
type CoordinatorResponse = exec.CoordinatorResponse

// Holder is a lease holder as reported in a response.
type Holder = exec.Holder

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

	resp := exec.Respond(sum)
	resp.Job, resp.Source, resp.Force, resp.RequestID = tr.Job, string(tr.Source), tr.Force, inv.requestID
	h.metrics(ctx, inv, tr, sum, runErr)

	if runErr != nil {
		log.ErrorContext(ctx, "coordinator failed", slog.String("phase", "run"), slog.Any("error", runErr))
		return CoordinatorResponse{}, runErr
	}
	if err := exec.Incomplete(sum); err != nil {
		phase, msg := phaseOf(sum)
		log.WarnContext(ctx, msg, slog.String("phase", phase), slog.Any("error", err))
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
	resp := exec.Respond(sum)
	resp.Job, resp.Source, resp.RequestID = s.Job, "submission", inv.requestID
	if err != nil {
		log.ErrorContext(ctx, "submission failed", slog.String("phase", "run"), slog.Any("error", err))
		return CoordinatorResponse{}, err
	}
	if err := exec.Incomplete(sum); err != nil {
		err = fmt.Errorf("submission %s+%s: %w", s.Job, s.Key, err)
		phase, msg := phaseOf(sum)
		log.WarnContext(ctx, msg, slog.String("phase", phase), slog.Any("error", err))
		return CoordinatorResponse{}, err
	}
	return resp, nil
}

// phaseOf is the log phase and message of an incomplete summary
// (exec.Incomplete): acquire when it waits behind a lease, fan-out when
// its fan-out stopped.
func phaseOf(sum coordinator.Summary) (phase, msg string) {
	if sum.Stopped != "" {
		return "fan-out", "fan-out incomplete"
	}
	return "acquire", "pending behind the lease"
}
