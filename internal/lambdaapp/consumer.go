package lambdaapp

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/emf"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/queue"
)

// ConsumerHandler is the consumer function's handler.
type ConsumerHandler struct {
	p HandlerParams
	// built is the core the handler works on, built once at construction
	// (exec.Build): its router, its chain starter and its caches serve
	// every invocation.
	built *exec.Core
	core  consumer.Consumer // Owner, Logger, Queue and ChainsFunc set per invocation
	name  string
	emf   *emf.Writer
	cold  coldStart
}

// NewConsumerHandler returns the handler working on p. Only p.Job is
// served: a message of another job is malformed (dead-lettered with its
// reason).
func NewConsumerHandler(p HandlerParams) (*ConsumerHandler, error) {
	if err := p.validate(Consumer); err != nil {
		return nil, err
	}
	name := p.functionName(Consumer)
	built, err := p.build(Consumer, name)
	if err != nil {
		return nil, err
	}
	c, err := built.Consumer(nil, name)
	if err != nil {
		return nil, fmt.Errorf("%s handler: %w", Consumer, err)
	}
	return &ConsumerHandler{p: p, built: built, core: *c, name: name, emf: p.metrics()}, nil
}

// Handle processes one SQS batch and reports the messages to redeliver.
// It fails no batch as a whole.
func (h *ConsumerHandler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	ctx = xrayParent(ctx)
	now := h.now()
	inv := invocationOf(ctx, h.name, h.p, &h.cold, now)
	inv.coldStartMetric(ctx, h.emf, now)
	log := inv.log
	msgs, bad := lambdaevent.Deliveries(ev)
	for _, b := range bad {
		log.ErrorContext(ctx, "record not translated; reported failed", slog.String("phase", "decode"),
			slog.String("message_id", b.MessageID), slog.Any("error", b.Err))
	}

	c := h.core
	c.Owner, c.Logger = inv.owner, log
	c.Queue = queue.ReceivedFrom(h.built.Router, h.source(ev))
	// The chain starter built with the handler, under the invocation's
	// owner and log (chained runs start under fence 0: the consumer
	// function holds no lease).
	c.ChainsFunc = h.built.Chains(inv.owner, log)
	res := c.Handle(ctx, inv.deadline, msgs)

	reasons := map[string]error{}
	for _, f := range res.Failed {
		reasons[f.MessageID] = f.Err
	}
	for _, f := range res.DeadLettered {
		reasons[f.MessageID] = f.Err
	}
	for _, it := range res.Outcomes() {
		run, _, _ := strings.Cut(it.Key, "/")
		attrs := []any{
			slog.String("phase", "item"), slog.String("job", jobOfKey(it.Key)), slog.String("run", run), slog.String("message_id", it.MessageID),
			slog.String("key", it.Key), slog.String("asset", it.Asset), slog.Int64("fence", it.Fence), slog.String("status", it.Status),
			slog.Int("attempt", it.Attempt), slog.Float64("processing_ms", ms(it.Processing)),
		}
		if it.TickToDone > 0 {
			attrs = append(attrs, slog.Float64("tick_to_done_ms", ms(it.TickToDone)))
		}
		if err := reasons[it.MessageID]; err != nil {
			attrs = append(attrs, slog.Any("error", err))
		}
		log.InfoContext(ctx, "item", attrs...)
	}
	h.metrics(ctx, inv, res, len(bad))
	return lambdaevent.ConsumerResponse(res, bad), nil
}

// source is the queue the batch came from (its first record's
// eventSourceARN names it), for heartbeats: one of p.Sources, else the
// work queue. An event source mapping reads one queue: every record of a
// batch comes from the same.
func (h *ConsumerHandler) source(ev events.SQSEvent) queue.Sender {
	if len(ev.Records) > 0 {
		arn := ev.Records[0].EventSourceARN
		if q, ok := h.p.Sources[arn[strings.LastIndex(arn, ":")+1:]]; ok {
			return q
		}
	}
	return h.p.Queue
}

// metrics writes one EMF record set per job of the batch (the Job
// dimension); messages whose job is unknown (malformed, untranslated)
// count under "unknown".
func (h *ConsumerHandler) metrics(ctx context.Context, inv invocation, res consumer.Result, untranslated int) {
	type tally struct {
		status               map[string]int
		failed, deadLettered int
		messages             int
		tickToDone           []float64
		limitWaits           map[string]int // by limit name, never by key
	}
	byJob := map[string]*tally{}
	of := func(job string) *tally {
		t := byJob[job]
		if t == nil {
			t = &tally{status: map[string]int{}}
			byJob[job] = t
		}
		return t
	}
	jobOfMessage := map[string]string{}
	for _, it := range res.Items {
		job := jobOfKey(it.Key)
		jobOfMessage[it.MessageID] = job
		of(job).messages++
	}
	for _, it := range res.Outcomes() { // a bulk shard's items too
		t := of(jobOfKey(it.Key))
		t.status[it.Status]++
		if it.Status == consumer.StatusSucceeded && it.TickToDone > 0 {
			t.tickToDone = append(t.tickToDone, ms(it.TickToDone))
		}
		if it.Status == consumer.StatusLimited && it.Limit != "" {
			if t.limitWaits == nil {
				t.limitWaits = map[string]int{}
			}
			t.limitWaits[it.Limit]++
		}
	}
	for _, f := range res.Failed {
		of(jobOrUnknown(jobOfMessage, f.MessageID)).failed++
	}
	for _, f := range res.DeadLettered {
		of(jobOrUnknown(jobOfMessage, f.MessageID)).deadLettered++
	}
	if untranslated > 0 {
		t := of(unknownJob)
		t.failed += untranslated
		t.messages += untranslated
	}
	if len(byJob) == 0 {
		of(unknownJob)
	}
	metric := func(name string, n int) emf.Metric {
		return emf.Metric{Name: name, Unit: emf.Count, Values: []float64{float64(n)}}
	}
	now := h.now()
	for _, job := range slices.Sorted(maps.Keys(byJob)) {
		t := byJob[job]
		base := []emf.Metric{
			metric("ItemsSucceeded", t.status[consumer.StatusSucceeded]),
			metric("ItemsFailed", t.failed),
			metric("ItemsDuplicate", t.status[consumer.StatusDuplicate]),
			metric("ItemsDead", t.status[consumer.StatusDead]),
			metric("ItemsDeadLettered", t.deadLettered),
			metric("ItemsSuperseded", t.status[consumer.StatusSuperseded]),
			metric("ItemsCancelled", t.status[consumer.StatusCancelled]),
			metric("ItemsOverBudget", t.status[consumer.StatusOverBudget]),
		}
		tickToDone := t.tickToDone
		// At most emf.MaxValues samples per record.
		for first := true; first || len(tickToDone) > 0; first = false {
			var record []emf.Metric
			if first {
				record = base
			}
			if n := min(len(tickToDone), emf.MaxValues); n > 0 {
				record = append(record, emf.Metric{Name: "TickToDone", Unit: emf.Milliseconds, Values: tickToDone[:n]})
				tickToDone = tickToDone[n:]
			}
			inv.emit(ctx, h.emf, now, job, map[string]any{"messages": t.messages}, record...)
		}
		// LimitWaits: messages given back by a busy key, one record per
		// limit with its name as a dimension. A limit's names are the
		// job's declared ones (bounded); its keys are data, of no bound,
		// and never a dimension.
		for _, limit := range slices.Sorted(maps.Keys(t.limitWaits)) {
			inv.emitDims(ctx, h.emf, now, map[string]string{"Job": job, "Limit": limit}, nil, metric("LimitWaits", t.limitWaits[limit]))
		}
	}
}

// unknownJob is the Job dimension of messages whose job is not known.
const unknownJob = "unknown"

// jobOfKey returns the job of an item key's text ("fx@…/EURUSD" → "fx"),
// or unknownJob.
func jobOfKey(key string) string {
	if job, _, ok := strings.Cut(key, "@"); ok && job != "" {
		return job
	}
	return unknownJob
}

func jobOrUnknown(m map[string]string, messageID string) string {
	if job, ok := m[messageID]; ok {
		return job
	}
	return unknownJob
}

func (h *ConsumerHandler) now() time.Time {
	if h.p.NowFunc != nil {
		return h.p.NowFunc()
	}
	return time.Now()
}
