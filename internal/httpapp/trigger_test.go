package httpapp_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/httpapp"
	"github.com/batonhq/baton/internal/lambdaevent"
)

var (
	tick = time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	now  = tick.Add(3 * time.Second)
)

// binaryEvent is a CloudEvent in binary mode: attributes in ce- headers,
// the data as the body.
func binaryEvent(id, typ string, at time.Time, data string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(data))
	r.Header.Set("Ce-Specversion", "1.0")
	r.Header.Set("Ce-Id", id)
	r.Header.Set("Ce-Source", "/apis/v1/namespaces/default/pingsources/fx-tick")
	r.Header.Set("Ce-Type", typ)
	if !at.IsZero() {
		r.Header.Set("Ce-Time", at.Format(time.RFC3339))
	}
	if data != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// structuredEvent is a CloudEvent in structured mode: the whole event as
// the JSON body.
func structuredEvent(id, typ string, at time.Time, data string) *http.Request {
	ev := map[string]any{"specversion": "1.0", "id": id, "source": "//cloudscheduler.googleapis.com/jobs/fx", "type": typ}
	if !at.IsZero() {
		ev["time"] = at.Format(time.RFC3339)
	}
	if data != "" {
		ev["datacontenttype"] = "application/json"
		ev["data"] = json.RawMessage(data)
	}
	body, _ := json.Marshal(ev)
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/cloudevents+json; charset=utf-8")
	return r
}

func plain(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

const pingType = "dev.knative.sources.ping"

func TestDecodeTriggerRequest(t *testing.T) {
	t.Parallel()
	params := httpapp.TriggerRequestParams{Jobs: []string{"fx"}, Now: now, Skew: time.Minute, MaxAge: time.Hour}
	two := params
	two.Jobs = []string{"fx", "eod"}
	onDemand := two // eod runs on demand or by a chain: no trigger ticks it
	onDemand.Unscheduled = []string{"eod"}
	tests := []struct {
		name    string
		req     *http.Request
		p       httpapp.TriggerRequestParams
		wantAt  time.Time // the decoded trigger's time
		mode    string
		wantErr string
	}{
		{name: "plain scheduler payload", req: plain(`{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z"}`), wantAt: tick},
		{name: "plain job only takes now", req: plain(`{"job":"fx"}`), wantAt: now},
		{name: "plain with Cloud Scheduler's schedule time", req: func() *http.Request {
			r := plain(`{"job":"fx"}`)
			r.Header.Set(httpapp.ScheduleTimeHeader, "2026-11-21T12:01:00Z")
			return r
		}(), wantAt: tick},
		{name: "plain with a bad schedule time", req: func() *http.Request {
			r := plain(`{"job":"fx"}`)
			r.Header.Set(httpapp.ScheduleTimeHeader, "yesterday")
			return r
		}(), wantErr: `header X-CloudScheduler-ScheduleTime: scheduler payload: field "scheduledTime"`},
		{name: "plain unknown field", req: plain(`{"job":"fx","scheduledtime":"2026-11-21T12:01:00Z"}`), wantErr: `"scheduledtime"`},
		{name: "plain unknown job", req: plain(`{"job":"eod"}`), wantErr: `job "eod" is not in this deployment's catalog`},
		{name: "plain job without a schedule", req: plain(`{"job":"eod"}`), p: onDemand, wantErr: `job eod has no schedule: it runs on demand (submit) or by a chain`},
		{name: "tick of a job without a schedule", req: binaryEvent("e10", pingType, tick, `{"job":"eod"}`), p: onDemand, wantErr: `job eod has no schedule`},
		{name: "plain not JSON", req: plain(`job=fx`), wantErr: "not a JSON object"},
		{name: "plain empty", req: plain(``), wantErr: "empty payload"},
		{name: "binary tick takes the event time", req: binaryEvent("e1", pingType, tick, `{"job":"fx"}`), wantAt: tick, mode: "binary"},
		{name: "structured tick takes the event time", req: structuredEvent("e2", pingType, tick, `{"job":"fx"}`), wantAt: tick, mode: "structured"},
		{name: "binary without data, one job", req: binaryEvent("e3", pingType, tick, ``), wantAt: tick, mode: "binary"},
		{name: "binary without data, two jobs", req: binaryEvent("e4", pingType, tick, ``), p: two, wantErr: `carries no data and the catalog has 2 jobs`},
		{name: "data scheduledTime wins", req: structuredEvent("e5", pingType, tick.Add(time.Second), `{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z"}`), wantAt: tick, mode: "structured"},
		{name: "data unknown field", req: binaryEvent("e6", pingType, tick, `{"job":"fx","extra":1}`), wantErr: `"extra"`},
		{name: "future event time", req: binaryEvent("e7", pingType, now.Add(time.Hour), `{"job":"fx"}`), wantErr: "time attribute: scheduler trigger: time 2026-11-21T13:01:03Z is 1h0m0s in the future"},
		{name: "stale event time", req: binaryEvent("e8", pingType, now.Add(-2*time.Hour), `{"job":"fx"}`), wantErr: "stale delivery"},
		{name: "binary missing id", req: binaryEvent("", pingType, tick, `{"job":"fx"}`), wantErr: "not a valid CloudEvent (binary mode)"},
		{name: "structured not an event", req: func() *http.Request {
			r := plain(`{"specversion":"1.0"}`)
			r.Header.Set("Content-Type", "application/cloudevents+json")
			return r
		}(), wantErr: "not a valid CloudEvent (structured mode)"},
		{name: "batch refused", req: func() *http.Request {
			r := plain(`[]`)
			r.Header.Set("Content-Type", "application/cloudevents-batch+json")
			return r
		}(), wantErr: "batched CloudEvents are not accepted"},
		{name: "data not JSON", req: func() *http.Request {
			r := binaryEvent("e9", pingType, tick, `job=fx`)
			r.Header.Set("Content-Type", "text/plain")
			return r
		}(), wantErr: `datacontenttype "text/plain": want application/json`},
		{name: "too large", req: plain(`{"job":"` + strings.Repeat("x", httpapp.MaxBody) + `"}`), wantErr: "body larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := tc.p
			if p.Jobs == nil {
				p = params
			}
			got, err := httpapp.DecodeTriggerRequest(tc.req, p)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, httpapp.ErrBadRequest)
				require.ErrorContains(t, err, tc.wantErr)
				require.NotContains(t, err.Error(), "\n")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.mode, got.Mode)
			tr, err := lambdaevent.DecodeTrigger(lambdaevent.TriggerParams{Payload: got.Payload, Jobs: p.Jobs, Now: now, Skew: time.Minute})
			require.NoError(t, err)
			require.Equal(t, "fx", tr.Job)
			require.True(t, tc.wantAt.Equal(tr.At), "at %s, want %s", tr.At, tc.wantAt)
		})
	}
}

func TestDecodePushRequest(t *testing.T) {
	t.Parallel()
	msg := `{"v":1,"key":"fx@2026-11-21T12:01:00Z#1/EURUSD","fence":1}`
	t.Run("binary", func(t *testing.T) {
		t.Parallel()
		r := binaryEvent("m1", "dev.baton.work", tick, msg)
		r.Header.Set("Ce-Deliveryattempt", "3")
		d, err := httpapp.DecodePushRequest(r)
		require.NoError(t, err)
		require.Equal(t, "m1", d.MessageID)
		require.Equal(t, 3, d.ReceiveCount)
		require.JSONEq(t, msg, string(d.Body))
	})
	t.Run("pubsub envelope", func(t *testing.T) {
		t.Parallel()
		env := `{"message":{"data":"` + b64(msg) + `","attributes":{"a":"b"},"messageId":"ps-7","publishTime":"2026-11-21T12:01:01Z"},"subscription":"projects/p/subscriptions/s","deliveryAttempt":2}`
		d, err := httpapp.DecodePushRequest(structuredEvent("ce-1", httpapp.PubSubMessagePublished, tick, env))
		require.NoError(t, err)
		require.Equal(t, "ps-7", d.MessageID)
		require.Equal(t, 2, d.ReceiveCount)
		require.Equal(t, msg, string(d.Body))
		require.Equal(t, map[string]string{"a": "b"}, d.Attributes)
	})
	// A standard Pub/Sub push subscription's request: no CloudEvent, the
	// envelope is the body.
	t.Run("pubsub push", func(t *testing.T) {
		t.Parallel()
		env := `{"message":{"attributes":{"a":"b"},"data":"` + b64(msg) + `","messageId":"2070443601311540","message_id":"2070443601311540",` +
			`"publishTime":"2026-11-21T12:01:01.123Z","publish_time":"2026-11-21T12:01:01.123Z"},"subscription":"projects/p/subscriptions/baton-push"}`
		d, err := httpapp.DecodePushRequest(plain(env))
		require.NoError(t, err)
		require.Equal(t, "2070443601311540", d.MessageID)
		require.Equal(t, 1, d.ReceiveCount)
		require.Equal(t, msg, string(d.Body))
		require.Equal(t, map[string]string{"a": "b"}, d.Attributes)
		require.Equal(t, time.Date(2026, 11, 21, 12, 1, 1, 123e6, time.UTC), d.SentAt)

		d, err = httpapp.DecodePushRequest(plain(`{"message":{"data":"` + b64(msg) + `","messageId":"m-9"},"subscription":"s","deliveryAttempt":4}`))
		require.NoError(t, err)
		require.Equal(t, 4, d.ReceiveCount, "the dead-letter policy's attempt count")
	})
	for name, tc := range map[string]struct {
		req     *http.Request
		wantErr string
	}{
		"not an event": {plain(msg), `not a CloudEvent (want a ce-specversion header, binary mode, or content type application/cloudevents+json, structured mode) nor a Pub/Sub push request (a JSON object with "message")`},
		"not JSON":     {plain(`message`), "nor a Pub/Sub push request"},
		"bad attempt": {func() *http.Request {
			r := binaryEvent("m2", "t", tick, msg)
			r.Header.Set("Ce-Deliveryattempt", "zero")
			return r
		}(), "extension deliveryattempt"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := httpapp.DecodePushRequest(tc.req)
			require.ErrorIs(t, err, httpapp.ErrBadRequest)
			require.NotErrorIs(t, err, httpapp.ErrUnusableMessage)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
	// An unusable envelope comes back whole, under its message id when it
	// has one, to be dead-lettered with the reason.
	for name, tc := range map[string]struct {
		req             *http.Request
		wantID, wantErr string
	}{
		"pubsub unknown":      {structuredEvent("ce-2", httpapp.PubSubMessagePublished, tick, `{"message":{"data":""},"extra":1}`), "ce-2", `unknown field "extra"`},
		"pubsub no msg":       {structuredEvent("ce-3", httpapp.PubSubMessagePublished, tick, `{"subscription":"s"}`), "ce-3", `field "message" is missing`},
		"pubsub bad data":     {structuredEvent("ce-4", httpapp.PubSubMessagePublished, tick, `{"message":{"data":"%%%"}}`), "ce-4", "Pub/Sub envelope"},
		"push bad data":       {plain(`{"message":{"data":"%%%","messageId":"m1"},"subscription":"s"}`), "m1", "Pub/Sub push request (message \"m1\"): Pub/Sub envelope: illegal base64 data"},
		"push unknown":        {plain(`{"message":{"data":"","messageId":"m2","colour":"red"},"subscription":"s"}`), "m2", `unknown field "colour"`},
		"push no id":          {plain(`{"message":{"data":"` + b64(msg) + `"},"subscription":"s"}`), "", `field "message.messageId" is missing`},
		"push bad attempt":    {plain(`{"message":{"data":"","messageId":"m3"},"deliveryAttempt":0}`), "m3", `"deliveryAttempt" is 0`},
		"push twice":          {plain(`{"message":{"data":"","messageId":"m4"},"message":{"data":"","messageId":"m5"}}`), "m5", `field "message" appears twice`},
		"push message string": {plain(`{"message":"hello","subscription":"s"}`), "", "Pub/Sub envelope: "},
		"push trailing":       {plain(`{"message":{"data":"","messageId":"m6"}} {}`), "", `unexpected "{}" after the JSON value`},
		"push case":           {plain(`{"Message":{"data":"","messageId":"m7"},"message":{"data":"","messageId":"m7"}}`), "m7", `field "Message": names are case-sensitive`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var body bytes.Buffer
			tee := io.TeeReader(tc.req.Body, &body)
			tc.req.Body = io.NopCloser(tee)
			d, err := httpapp.DecodePushRequest(tc.req)
			require.ErrorIs(t, err, httpapp.ErrUnusableMessage)
			require.NotErrorIs(t, err, httpapp.ErrBadRequest)
			require.ErrorContains(t, err, tc.wantErr)
			require.Equal(t, tc.wantID, d.MessageID)
			require.Equal(t, body.String(), string(d.Body), "the request's body, whole")
		})
	}
}

func b64(s string) string {
	return base64.StdEncoding.EncodeToString([]byte(s))
}
