package exec

import (
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/coordinator"
)

// ErrIncomplete is matched by the error a coordinator's transport answers
// with (Incomplete) when the trigger's or the submission's work is not
// done yet: the fan-out stopped before its end (deadline or budget), or
// the tick or submission waits behind another holder's lease. The run
// stays resumable; a retry (Lambda's asynchronous retry, the scheduler's
// retry policy, an HTTP sender's retry of a 503) resumes it.
var ErrIncomplete = errors.New("fan-out incomplete")

// Incomplete is the retry decision of a coordinator's summary, the same
// for every transport: an error matching ErrIncomplete, naming why and
// what a retry does, when the work is not done yet; nil when it is (a
// skip of a tick already fanned out, a submission its key found, are
// done).
func Incomplete(sum coordinator.Summary) error {
	switch {
	case sum.Outcome == coordinator.OutcomeSkipped && sum.Pending:
		// The holder is busy with another tick (or is opening this very
		// submission): fail so that the trigger is retried instead of
		// dropping this tick.
		holder := "another caller"
		if h := sum.Holder; h != nil {
			holder = fmt.Sprintf("%s until %s", h.Owner, h.ExpiresAt.Format(time.RFC3339Nano))
		}
		if sum.Nominal.IsZero() { // a submission: its key's lease
			return fmt.Errorf("%w: submission of job %s not opened yet: lease held by %s; a retry finds it", ErrIncomplete, sum.Job, holder)
		}
		return fmt.Errorf("%w: tick %s of job %s not run yet: lease held by %s; a retry runs it",
			ErrIncomplete, sum.Nominal.Format(time.RFC3339), sum.Job, holder)
	case sum.Stopped != "":
		return fmt.Errorf("%w: run %s stopped (%s) at %d of %d assets; a retry resumes it",
			ErrIncomplete, sum.Run, sum.Stopped, sum.Cursor, sum.Total)
	}
	return nil
}

// CoordinatorResponse is a coordinator's answer to a trigger or a
// submission it ran, the same for every transport: the Lambda
// coordinator's result (batonlambda.CoordinatorResponse) and the HTTP
// coordinator endpoint's body. Its JSON is a format: fields are only ever
// added, omitted when empty unless every transport always set them.
type CoordinatorResponse struct {
	Job string `json:"job"`
	// Source is rule, rule_input, scheduler, replay, submission or (HTTP)
	// cloudevent.
	Source string `json:"source"`
	Force  bool   `json:"force,omitempty"`
	Run    string `json:"run,omitempty"` // empty when skipped
	// Nominal is the tick (zero for a submission).
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
	// RequestID is the invocation's (Lambda's request id) or the
	// request's (HTTP: the id in the lease owner).
	RequestID string `json:"request_id"`
	// EventID and EventMode (binary or structured) are the CloudEvent's
	// when the trigger came as one (HTTP).
	EventID   string `json:"event_id,omitempty"`
	EventMode string `json:"event_mode,omitempty"`
}

// Holder is a lease holder as reported in a response.
type Holder struct {
	Owner     string    `json:"owner"`
	ExpiresAt time.Time `json:"expires_at"`
	Fence     int64     `json:"fence"`
}

// Respond returns the response to a run whose summary is sum: the
// summary's fields; the caller adds the job, the source, the force flag
// and the request's identity.
func Respond(sum coordinator.Summary) CoordinatorResponse {
	r := CoordinatorResponse{
		Job: sum.Job, Nominal: sum.Nominal, Outcome: string(sum.Outcome), Enqueued: sum.Enqueued, Cursor: sum.Cursor, Total: sum.Total,
		Fence: sum.Fence, Stopped: sum.Stopped, Deduped: sum.Deduped, PayloadDiffers: sum.PayloadDiffers,
		AcquireLatencyMS: ms(sum.AcquireLatency), DurationMS: ms(sum.Duration),
	}
	if sum.Run.Job != "" {
		r.Run = sum.Run.String()
	}
	if sum.Holder != nil {
		r.Holder = &Holder{Owner: sum.Holder.Owner, ExpiresAt: sum.Holder.ExpiresAt, Fence: sum.Holder.Fence}
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
