package httpapp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/exec"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/strictjson"
	"github.com/batonhq/baton/internal/telemetry"
)

// PubSubMessagePublished is the CloudEvent type Eventarc gives a Pub/Sub
// message; its data wraps the message (base64) as a push subscription
// sends it.
const PubSubMessagePublished = "google.cloud.pubsub.topic.v1.messagePublished"

// DeliveryAttemptExtension is the CloudEvent extension read as the
// message's receive count (1 when absent).
const DeliveryAttemptExtension = "deliveryattempt"

// ErrUnusableMessage matches the error of DecodePushRequest for a request
// that is the push of one message whose envelope is unusable (a Pub/Sub
// envelope with an unknown field, data that is not base64, no message id,
// …): no redelivery can fix it, and a push system redelivers every answer
// but a success (Pub/Sub until the message's retention ends). The
// delivery returned with it carries the request's body whole and the
// message id when one could be read: the push endpoint dead-letters it
// with the reason and acknowledges it, as a malformed message.
var ErrUnusableMessage = errors.New("unusable pushed message")

// DecodePushRequest reads one pushed work message from r: a CloudEvent
// (binary or structured mode) whose data is the message's body, a Pub/Sub
// messagePublished CloudEvent whose data wraps it, or a standard Pub/Sub
// push request (not a CloudEvent: a JSON body {"message": {"data",
// "attributes", "messageId", …}, "subscription"}). The CloudEvent's id, or
// the Pub/Sub messageId, is the message id; the deliveryattempt extension
// (or the Pub/Sub envelope's deliveryAttempt) the receive count; the
// Pub/Sub attributes the message's attributes. The body itself is not
// judged here: a malformed one is the consumer's to dead-letter with its
// reason. An unusable Pub/Sub envelope is an error matching
// ErrUnusableMessage, returned with the delivery to dead-letter; every
// other error matches ErrBadRequest (not a push request at all). Errors
// name what is wrong.
func DecodePushRequest(r *http.Request) (queue.Delivery, error) {
	if r.Body == nil {
		r.Body = http.NoBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return queue.Delivery{}, badRequestf("reading the body: %v", err)
	}
	if len(body) > MaxBody {
		return queue.Delivery{}, badRequestf("body larger than %d bytes", MaxBody)
	}
	if !IsCloudEvent(r.Header) {
		if !IsPubSubPush(body) {
			return queue.Delivery{}, badRequestf(`not a CloudEvent (want a ce-specversion header, binary mode, or content type application/cloudevents+json, structured mode) nor a Pub/Sub push request (a JSON object with "message")`)
		}
		return DecodePubSubPush(body)
	}
	ev, _, err := decodeCloudEvent(r, body)
	if err != nil {
		return queue.Delivery{}, err
	}
	// No receipt handle: the message is not in the engine's queue, so a
	// heartbeat extends the claim in the ledger only (the push system's
	// acknowledgement deadline is the message's visibility).
	d := queue.Delivery{MessageID: ev.ID(), Body: ev.Data(), ReceiveCount: 1, SentAt: ev.Time().UTC()}
	if d.ReceiveCount, err = deliveryAttempt(ev); err != nil {
		return queue.Delivery{}, err
	}
	if ev.Type() == PubSubMessagePublished {
		whole := d
		if err := unwrapPubSub(&d, false); err != nil {
			whole.Body = body
			return whole, fmt.Errorf("%w: CloudEvent %s (type %s): %v", ErrUnusableMessage, strictjson.Quote(ev.ID()), ev.Type(), err)
		}
	}
	return d, nil
}

// IsPubSubPush reports whether body is a standard Pub/Sub push request
// (it starts with a JSON object with a "message" member), well formed or
// not.
func IsPubSubPush(body []byte) bool {
	var fields map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(body)).Decode(&fields) != nil {
		return false
	}
	_, ok := fields["message"]
	return ok
}

// DecodePubSubPush decodes a standard Pub/Sub push request's body: the
// message's data (base64) is the delivery's body, its attributes the
// delivery's, its messageId the message id, the envelope's
// deliveryAttempt (set when the subscription has a dead-letter policy)
// the receive count (1 when absent), its publishTime the time sent. The
// decoding is strict (unknown or duplicate fields, trailing data, a data
// that is not base64, a missing messageId are refused); an error matches
// ErrUnusableMessage and comes with the delivery to dead-letter: the body
// whole, under the message id when one could be read.
func DecodePubSubPush(body []byte) (queue.Delivery, error) {
	d := queue.Delivery{Body: body, ReceiveCount: 1}
	if err := unwrapPubSub(&d, true); err != nil {
		whole := queue.Delivery{Body: body, ReceiveCount: 1, MessageID: lenientMessageID(body)}
		return whole, fmt.Errorf("%w: Pub/Sub push request (message %s): %v", ErrUnusableMessage, strictjson.Quote(whole.MessageID), err)
	}
	return d, nil
}

// lenientMessageID is the message id of a Pub/Sub envelope that may be
// otherwise malformed, or "".
func lenientMessageID(body []byte) string {
	var env struct {
		Message struct {
			MessageID    string `json:"messageId"`
			MessageIDAlt string `json:"message_id"`
		} `json:"message"`
	}
	_ = json.Unmarshal(body, &env)
	return cmp.Or(env.Message.MessageID, env.Message.MessageIDAlt)
}

func deliveryAttempt(ev *event.Event) (int, error) {
	v, ok := ev.Extensions()[DeliveryAttemptExtension]
	if !ok {
		return 1, nil
	}
	var n int
	switch x := v.(type) {
	case int32:
		n = int(x)
	case string:
		var err error
		if n, err = strconv.Atoi(x); err != nil {
			n = 0
		}
	}
	if n < 1 {
		return 0, badRequestf("CloudEvent %s: extension %s is %s: want a positive integer", strictjson.Quote(ev.ID()), DeliveryAttemptExtension, strictjson.Quote(fmt.Sprint(v)))
	}
	return n, nil
}

// pubsubEnvelope is the data of a messagePublished event (and the body of
// a Pub/Sub push request).
type pubsubEnvelope struct {
	Message *struct {
		Data           []byte            `json:"data"` // base64 in JSON
		Attributes     map[string]string `json:"attributes"`
		MessageID      string            `json:"messageId"`
		MessageIDAlt   string            `json:"message_id"`
		PublishTime    string            `json:"publishTime"`
		PublishTimeAlt string            `json:"publish_time"`
		OrderingKey    string            `json:"orderingKey"`
	} `json:"message"`
	Subscription    string `json:"subscription"`
	DeliveryAttempt *int   `json:"deliveryAttempt"`
}

// pubsubKnown are the envelope's field names, in their one spelling.
var pubsubKnown = []string{"message", "subscription", "deliveryAttempt"}

// unwrapPubSub replaces d's body by the message its Pub/Sub envelope (the
// body) wraps. needID: the envelope must name the message (a push
// request's; a CloudEvent has its own id).
func unwrapPubSub(d *queue.Delivery, needID bool) error {
	if _, err := strictjson.Object(d.Body, pubsubKnown); err != nil {
		if errors.Is(err, strictjson.ErrNotObject) {
			return errors.New("Pub/Sub envelope: not a JSON object")
		}
		return fmt.Errorf("Pub/Sub envelope: %v", err)
	}
	var env pubsubEnvelope
	dec := json.NewDecoder(bytes.NewReader(d.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return fmt.Errorf("Pub/Sub envelope: %s", cut(oneLine(err.Error())))
	}
	if env.Message == nil {
		return fmt.Errorf(`Pub/Sub envelope: field "message" is missing`)
	}
	id := cmp.Or(env.Message.MessageID, env.Message.MessageIDAlt)
	if needID && id == "" {
		return fmt.Errorf(`Pub/Sub envelope: field "message.messageId" is missing`)
	}
	d.Body, d.Attributes = env.Message.Data, env.Message.Attributes
	if id != "" {
		d.MessageID = id
	}
	if at, err := time.Parse(time.RFC3339Nano, cmp.Or(env.Message.PublishTime, env.Message.PublishTimeAlt)); err == nil {
		d.SentAt = at.UTC()
	}
	if env.DeliveryAttempt != nil {
		if *env.DeliveryAttempt < 1 {
			return fmt.Errorf(`Pub/Sub envelope: field "deliveryAttempt" is %d: want a positive integer`, *env.DeliveryAttempt)
		}
		d.ReceiveCount = *env.DeliveryAttempt
	}
	return nil
}

// cut bounds an error's text that may quote the request (an unknown
// field's name).
func cut(s string) string {
	const max = 256
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

// PushResponse is the push endpoint's answer for one message.
type PushResponse struct {
	MessageID string `json:"message_id"`
	Key       string `json:"key,omitempty"`
	Status    string `json:"status"` // a consumer status: succeeded, duplicate, dead, …
	Attempt   int    `json:"attempt,omitempty"`
	// DeadLettered is the reason the message was forwarded to the
	// dead-letter queue (and acknowledged).
	DeadLettered string `json:"dead_lettered,omitempty"`
	// Error is why the message is to be delivered again (status 503).
	Error string `json:"error,omitempty"`
}

type pushHandler struct {
	p Params
	c *consumer.Consumer
}

// NewPush returns the push endpoint: a POST carrying one work message as
// a CloudEvent (DecodePushRequest), as a push subscription sends it. The
// message goes through the same consumer as a pulled one: vouched by the
// ledger, claimed, processed, its verdict recorded, dead-lettered with its
// reason to the backend's dead-letter queue. Answers, so that the push
// system retries only what a retry can fix: 200 when the message is done
// with (succeeded, a duplicate, dead, superseded, or dead-lettered with
// its reason); 503 when it is to be delivered again (failed and to be
// retried, held by another claim, given back at a stop); 400 for a request
// that is neither a CloudEvent nor a Pub/Sub push request; 401 for an
// unverified caller. A Pub/Sub push request (DecodePubSubPush) is served
// beside CloudEvents, with the same vouching and dead-lettering; one whose
// envelope is unusable is dead-lettered whole with the reason and answered
// 200 (dead_lettered), since Pub/Sub redelivers any other answer; with no
// dead-letter queue it is answered 503, to be redelivered, as a malformed
// message is.
func NewPush(p Params) (http.Handler, error) {
	return newPush(p, p.build)
}

// newPush is NewPush on the core build returns.
func newPush(p Params, build func() (*exec.Core, error)) (*pushHandler, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Backend.Effects == nil {
		return nil, fmt.Errorf("http push: the backend has no effect store")
	}
	// The messages the consumer sends (a shard's items, derived items,
	// chained runs) go through the core's router, each job's to its queue.
	core, err := build()
	if err != nil {
		return nil, fmt.Errorf("http push: %w", err)
	}
	c, err := core.Consumer(nil, p.owner()+"/push") // a pushed message is in no queue of the engine's
	if err != nil {
		return nil, fmt.Errorf("http push: %w", err)
	}
	c.Stop = p.Stop
	return &pushHandler{p: p, c: c}, nil
}

func (h *pushHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.p.admit(w, r) {
		return
	}
	d, err := DecodePushRequest(r)
	if err != nil && !errors.Is(err, ErrUnusableMessage) {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	deadline := h.p.now().Add(h.p.timeout())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.p.timeout())
	defer cancel()
	// A traced caller's request and the item's span are one trace.
	ctx = telemetry.FromHeader(ctx, r.Header)
	c := *h.c // the settings; the owner is this request's
	c.Owner = fmt.Sprintf("%s/push/%s", h.p.owner(), requestID())
	var res consumer.Result
	if err != nil {
		// An unusable envelope: dead-lettered whole with the reason and
		// acknowledged, as a malformed message (a 4xx would have the push
		// system redeliver it until its retention ends).
		res = c.HandleMalformed(ctx, d, err)
	} else {
		res = c.Handle(ctx, deadline, []queue.Delivery{d})
	}
	out := PushResponse{MessageID: d.MessageID, Status: consumer.StatusMalformed}
	if len(res.Items) == 1 {
		it := res.Items[0]
		out.Key, out.Status, out.Attempt = it.Key, it.Status, it.Attempt
	}
	for _, f := range res.DeadLettered {
		out.DeadLettered = f.Err.Error()
	}
	if len(res.Failed) > 0 {
		out.Error = res.Failed[0].Err.Error()
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter.Seconds())))
		writeJSON(w, http.StatusServiceUnavailable, out)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// retryAfter is the delay a push system is asked to wait before the next
// delivery of a message to retry.
const retryAfter = 5 * time.Second
