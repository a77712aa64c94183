package httpapp_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/httpapp"
	"github.com/batonhq/baton/internal/lambdaevent"
)

// fuzzRequest builds a request from fuzzed parts: mode 0 plain (at in
// Cloud Scheduler's schedule-time header), 1 binary (id and at in the ce-
// headers), 2 structured.
func fuzzRequest(mode uint8, contentType, id, at string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	switch mode % 3 {
	case 0:
		if at != "" {
			r.Header.Set(httpapp.ScheduleTimeHeader, at)
		}
	case 1:
		r.Header.Set("Ce-Specversion", "1.0")
		r.Header.Set("Ce-Id", id)
		r.Header.Set("Ce-Source", "/s")
		r.Header.Set("Ce-Type", "t")
		r.Header.Set("Ce-Time", at)
		r.Header.Set("Ce-Deliveryattempt", id)
	case 2:
		r.Header.Set("Content-Type", "application/cloudevents+json")
	}
	return r
}

func addSeeds(f *testing.F) {
	f.Add(uint8(0), "application/json", "", "", []byte(`{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z"}`))
	f.Add(uint8(1), "application/json", "e1", "2026-11-21T12:01:00Z", []byte(`{"job":"fx"}`))
	f.Add(uint8(1), "", "e1", "2026-11-21T12:01:00Z", []byte(``))
	f.Add(uint8(2), "", "", "", []byte(`{"specversion":"1.0","id":"e","source":"/s","type":"t","time":"2026-11-21T12:01:00Z","data":{"job":"fx"}}`))
	f.Add(uint8(2), "", "", "", []byte(`{"specversion":"1.0","id":"e","source":"/s","type":"google.cloud.pubsub.topic.v1.messagePublished","data":{"message":{"data":"e30="}}}`))
	f.Add(uint8(1), "text/plain", "2", "yesterday", []byte(`{"v":1}`))
}

func FuzzDecodeTriggerRequest(f *testing.F) {
	addSeeds(f)
	p := httpapp.TriggerRequestParams{Jobs: []string{"fx"}, Now: now, Skew: time.Minute, MaxAge: time.Hour}
	f.Fuzz(func(t *testing.T, mode uint8, contentType, id, at string, body []byte) {
		got, err := httpapp.DecodeTriggerRequest(fuzzRequest(mode, contentType, id, at, body), p)
		if err != nil {
			if !bytes.Contains([]byte(err.Error()), []byte(httpapp.ErrBadRequest.Error())) {
				t.Fatalf("error does not say bad request: %v", err)
			}
			return
		}
		// What is accepted is a trigger the coordinator takes.
		if _, err := lambdaevent.DecodeTrigger(lambdaevent.TriggerParams{Payload: got.Payload, Jobs: p.Jobs, Now: now, Skew: time.Minute, MaxAge: time.Hour}); err != nil {
			t.Fatalf("accepted %q, but the coordinator refuses it: %v", got.Payload, err)
		}
	})
}

func FuzzDecodePushRequest(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, mode uint8, contentType, id, at string, body []byte) {
		d, err := httpapp.DecodePushRequest(fuzzRequest(mode, contentType, id, at, body))
		if errors.Is(err, httpapp.ErrUnusableMessage) {
			if len(d.Body) < len(body) || d.ReceiveCount < 1 {
				t.Fatalf("an unusable message not returned whole: %q", d.Body)
			}
			return
		}
		if err != nil {
			return
		}
		if d.MessageID == "" || d.ReceiveCount < 1 {
			t.Fatalf("accepted a delivery without an id or with receive count %d", d.ReceiveCount)
		}
	})
}

// FuzzDecodePubSubPush: a Pub/Sub push request's body is decoded or
// refused with ErrUnusableMessage and returned whole (to be
// dead-lettered), never panics, bounds its error; what is accepted has a
// message id, a receive count, and the envelope's data as its body.
func FuzzDecodePubSubPush(f *testing.F) {
	for _, s := range []string{
		`{"message":{"data":"eyJ2IjoxfQ==","attributes":{"a":"b"},"messageId":"1","publishTime":"2026-11-21T12:01:01.1Z"},"subscription":"s"}`,
		`{"message":{"data":"e30=","messageId":"1"},"deliveryAttempt":2}`,
		`{"message":{"data":"%%%","messageId":"1"}}`,
		`{"message":{"data":"","messageId":"1","x":1}}`,
		`{"message":{},"message":{}}`,
		`{"message":null}`,
		`{"message":{"messageId":"1"}} {}`,
		`{"Message":{"messageId":"1"}}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := httpapp.DecodePubSubPush(body)
		if err != nil {
			if !errors.Is(err, httpapp.ErrUnusableMessage) || !bytes.Equal(d.Body, body) || d.ReceiveCount != 1 {
				t.Fatalf("refused %q without returning it whole: %v", body, err)
			}
			if len(err.Error()) > 600 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if d.MessageID == "" || d.ReceiveCount < 1 {
			t.Fatalf("accepted %q without an id or with receive count %d", body, d.ReceiveCount)
		}
		var env struct {
			Message struct {
				Data []byte `json:"data"`
			} `json:"message"`
		}
		if err := json.Unmarshal(body, &env); err != nil || !bytes.Equal(env.Message.Data, d.Body) {
			t.Fatalf("accepted %q, body %q is not its data (%v)", body, d.Body, err)
		}
	})
}
