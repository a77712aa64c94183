package httpapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/batonhq/baton/internal/consumer"
	"github.com/batonhq/baton/internal/engine"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/strictjson"
)

// PubSubMessagePublished is the CloudEvent type Eventarc gives a Pub/Sub
// message; its data wraps the message (base64) as a push subscription
// sends it.
const PubSubMessagePublished = "google.cloud.pubsub.topic.v1.messagePublished"

// DeliveryAttemptExtension is the CloudEvent extension read as the
// message's receive count (1 when absent).
const DeliveryAttemptExtension = "deliveryattempt"

// DecodePushRequest reads one pushed work message from r: a CloudEvent
// (binary or structured mode) whose data is the message's body, or a
// Pub/Sub messagePublished event whose data wraps it. The event's id is
// the message id and its deliveryattempt extension (or the Pub/Sub
// envelope's deliveryAttempt) the receive count. The body itself is not
// judged here: a malformed one is the consumer's to dead-letter with its
// reason. Every error matches ErrBadRequest and names what is wrong.
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
		return queue.Delivery{}, badRequestf("not a CloudEvent: want a ce-specversion header (binary mode) or content type application/cloudevents+json (structured mode)")
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
		if err := unwrapPubSub(&d); err != nil {
			return queue.Delivery{}, fmt.Errorf("%w: CloudEvent %s (type %s): %v", ErrBadRequest, strictjson.Quote(ev.ID()), ev.Type(), err)
		}
	}
	return d, nil
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

func unwrapPubSub(d *queue.Delivery) error {
	var env pubsubEnvelope
	dec := json.NewDecoder(bytes.NewReader(d.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return fmt.Errorf("Pub/Sub envelope: %s", oneLine(err.Error()))
	}
	if dec.More() {
		return fmt.Errorf("Pub/Sub envelope: data after the object")
	}
	if env.Message == nil {
		return fmt.Errorf(`Pub/Sub envelope: field "message" is missing`)
	}
	d.Body, d.Attributes = env.Message.Data, env.Message.Attributes
	if id := env.Message.MessageID; id != "" {
		d.MessageID = id
	}
	if env.DeliveryAttempt != nil {
		if *env.DeliveryAttempt < 1 {
			return fmt.Errorf(`Pub/Sub envelope: field "deliveryAttempt" is %d: want a positive integer`, *env.DeliveryAttempt)
		}
		d.ReceiveCount = *env.DeliveryAttempt
	}
	return nil
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
// that is not a CloudEvent at all; 401 for an unverified caller.
func NewPush(p Params) (http.Handler, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Backend.Effects == nil {
		return nil, fmt.Errorf("http push: the backend has no effect store")
	}
	router, _, err := engine.JobQueues(context.Background(), p.Backend, p.Catalog)
	if err != nil {
		return nil, fmt.Errorf("http push: %w", err)
	}
	c := newConsumer(p, p.Stop)
	c.Queue = router // a derived item of a job with a queue of its own goes there
	return &pushHandler{p: p, c: c}, nil
}

func (h *pushHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.p.admit(w, r) {
		return
	}
	d, err := DecodePushRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	deadline := h.p.now().Add(h.p.timeout())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.p.timeout())
	defer cancel()
	c := *h.c // the settings; the owner is this request's
	c.Owner = fmt.Sprintf("%s/push/%s", h.p.owner(), requestID())
	res := c.Handle(ctx, deadline, []queue.Delivery{d})
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
