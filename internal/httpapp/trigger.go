package httpapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/strictjson"
)

// MaxBody is the largest request body the handlers read.
const MaxBody = 1 << 20

// SourceCloudEvent is the trigger source reported for a CloudEvent tick.
const SourceCloudEvent = "cloudevent"

// ErrBadRequest matches every error about a request that no retry can
// fix: it is answered 400 with the reason.
var ErrBadRequest = errors.New("bad request")

// badRequestf returns an error matching ErrBadRequest.
func badRequestf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

// ScheduleTimeHeader is the header in which Cloud Scheduler sends the
// job's schedule time: a plain {"job"} trigger takes its tick from it.
const ScheduleTimeHeader = "X-CloudScheduler-ScheduleTime"

// RequestTrigger is a trigger request turned into the coordinator's input.
type RequestTrigger struct {
	// Payload is the trigger in a shape lambdaevent.DecodeTrigger takes.
	Payload []byte
	// CloudEvent is the event's mode ("binary" or "structured"), id, type
	// and source; empty for a plain JSON trigger.
	Mode, EventID, EventType, EventSource string
}

// TriggerRequestParams are the inputs of DecodeTriggerRequest.
type TriggerRequestParams struct {
	Jobs        []string // the catalog's job names
	Unscheduled []string // those without a schedule (lambdaevent.TriggerParams.Unscheduled)
	Now         time.Time
	// Skew and MaxAge bound the trigger time as lambdaevent.TriggerParams
	// says.
	Skew, MaxAge time.Duration
}

// IsCloudEvent reports whether h carries a CloudEvent: binary mode (a
// ce-specversion header) or structured or batched mode (the content type).
func IsCloudEvent(h http.Header) bool {
	if h.Get("Ce-Specversion") != "" {
		return true
	}
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return strings.HasPrefix(mt, "application/cloudevents")
}

// DecodeTriggerRequest reads the coordinator's input from r: a CloudEvent
// in binary or structured mode, or a plain JSON trigger (the body the
// Lambda coordinator accepts, package lambdaevent; a {"job"} takes its
// tick from the X-CloudScheduler-ScheduleTime header when there is one,
// else from the time it arrives). The trigger is checked
// in full (strict decoding: unknown or misspelt fields, a job not in the
// catalog, a bad, future or stale time are refused). Every error matches
// ErrBadRequest and names what is wrong.
//
// A CloudEvent's data is the trigger ({"job"}, {"job", "scheduledTime"} or
// a replay's {"job", "scheduledTime", "force"}); without a scheduledTime
// the tick is the event's time attribute (a Knative PingSource sets it to
// the tick), else the time it arrives. Empty data is accepted when the
// catalog has one job.
func DecodeTriggerRequest(r *http.Request, p TriggerRequestParams) (RequestTrigger, error) {
	if r.Body == nil {
		r.Body = http.NoBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return RequestTrigger{}, badRequestf("reading the body: %v", err)
	}
	if len(body) > MaxBody {
		return RequestTrigger{}, badRequestf("body larger than %d bytes", MaxBody)
	}
	if !IsCloudEvent(r.Header) {
		t, err := lambdaevent.DecodeTrigger(p.lambda(body))
		if err != nil {
			return RequestTrigger{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
		at := r.Header.Get(ScheduleTimeHeader)
		if t.Source != lambdaevent.SourceRuleInput || at == "" {
			return RequestTrigger{Payload: body}, nil
		}
		// {"job"} from Cloud Scheduler: the tick is the schedule time it
		// sends, the same on every retry.
		payload, _ := json.Marshal(map[string]string{"job": t.Job, "scheduledTime": at})
		if _, err := lambdaevent.DecodeTrigger(p.lambda(payload)); err != nil {
			return RequestTrigger{}, fmt.Errorf("%w: header %s: %v", ErrBadRequest, ScheduleTimeHeader,
				strings.TrimPrefix(err.Error(), lambdaevent.ErrBadTrigger.Error()+": "))
		}
		return RequestTrigger{Payload: payload}, nil
	}
	ev, mode, err := decodeCloudEvent(r, body)
	if err != nil {
		return RequestTrigger{}, err
	}
	out := RequestTrigger{Mode: mode, EventID: ev.ID(), EventType: ev.Type(), EventSource: ev.Source()}
	out.Payload, err = eventTrigger(ev, p)
	if err != nil {
		return RequestTrigger{}, fmt.Errorf("%w: CloudEvent %s (type %s): %v", ErrBadRequest, strictjson.Quote(ev.ID()), strictjson.Quote(ev.Type()), err)
	}
	return out, nil
}

func (p TriggerRequestParams) lambda(payload []byte) lambdaevent.TriggerParams {
	return lambdaevent.TriggerParams{Payload: payload, Jobs: p.Jobs, Unscheduled: p.Unscheduled, Now: p.Now, Skew: p.Skew, MaxAge: p.MaxAge}
}

// decodeCloudEvent decodes the event of r (whose body was read into body)
// with the CloudEvents SDK and validates its attributes.
func decodeCloudEvent(r *http.Request, body []byte) (*event.Event, string, error) {
	if cehttp.IsHTTPBatch(r.Header) {
		return nil, "", badRequestf("batched CloudEvents are not accepted: send one event per request")
	}
	mode := "binary"
	if r.Header.Get("Ce-Specversion") == "" {
		mode = "structured"
	}
	req := r.Clone(r.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	ev, err := cehttp.NewEventFromHTTPRequest(req)
	if err != nil {
		return nil, "", badRequestf("not a valid CloudEvent (%s mode): %s", mode, oneLine(err.Error()))
	}
	if err := ev.Validate(); err != nil {
		return nil, "", badRequestf("not a valid CloudEvent (%s mode): %s", mode, oneLine(err.Error()))
	}
	return ev, mode, nil
}

// eventTrigger turns a CloudEvent into the coordinator's payload.
func eventTrigger(ev *event.Event, p TriggerRequestParams) ([]byte, error) {
	data := bytes.TrimSpace(ev.Data())
	if ct := ev.DataContentType(); ct != "" && !isJSON(ct) && len(data) > 0 {
		return nil, fmt.Errorf("datacontenttype %s: want application/json", strictjson.Quote(ct))
	}
	if len(data) == 0 {
		if len(p.Jobs) != 1 {
			return nil, fmt.Errorf(`it carries no data and the catalog has %d jobs (%s): give it the data {"job": "<name>"}`,
				len(p.Jobs), strings.Join(p.Jobs, ", "))
		}
		data, _ = json.Marshal(map[string]string{"job": p.Jobs[0]})
	}
	t, err := lambdaevent.DecodeTrigger(p.lambda(data))
	if err != nil {
		return nil, fmt.Errorf("data: %v", strings.TrimPrefix(err.Error(), lambdaevent.ErrBadTrigger.Error()+": "))
	}
	if t.Source != lambdaevent.SourceRuleInput || ev.Time().IsZero() {
		return data, nil
	}
	// {"job"} alone: the tick is the event's time, checked as a scheduled
	// trigger's (not in the future beyond the skew, not stale).
	payload, _ := json.Marshal(map[string]string{"job": t.Job, "scheduledTime": ev.Time().UTC().Format(time.RFC3339Nano)})
	if _, err := lambdaevent.DecodeTrigger(p.lambda(payload)); err != nil {
		return nil, fmt.Errorf("time attribute: %v", strings.TrimPrefix(err.Error(), lambdaevent.ErrBadTrigger.Error()+": "))
	}
	return payload, nil
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// oneLine joins a multi-line error into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
