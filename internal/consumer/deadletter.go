package consumer

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/redact"
)

// maxReasonBytes bounds the reason attribute of a dead letter.
const maxReasonBytes = 1024

// forward sends d's body and attributes to the dead-letter queue with the
// reason in message.AttrError. A message that would not fit in one send
// with its reason (the queue took it with fewer attributes, or SQS's limit
// is larger than one batch's) is forwarded with its body cut to fit, its
// original id and size in attributes: poison of any size reaches the
// dead-letter queue with its reason.
func (c *Consumer) forward(ctx context.Context, d queue.Delivery, reason error) error {
	if _, err := queue.SendAll(ctx, c.DeadLetter, []queue.Message{deadLetter(d, reason)}, nil); err != nil {
		return fmt.Errorf("forward message %s: %w", d.MessageID, err)
	}
	return nil
}

// deadLetter is the message forward sends for d.
func deadLetter(d queue.Delivery, reason error) queue.Message {
	attrs := maps.Clone(d.Attributes)
	if attrs == nil {
		attrs = map[string]string{}
	}
	// Redacted: a reason is read by people (baton dlq list, the console)
	// and must not carry a secret an error quoted.
	msg := redact.String(reason.Error())
	if len(msg) > maxReasonBytes {
		msg = strings.ToValidUTF8(msg[:maxReasonBytes], "")
	}
	attrs[message.AttrError] = msg
	m := queue.Message{Body: d.Body, Attributes: attrs}
	if m.Size() <= queue.MaxBatchBytes {
		return m
	}
	// Cut: drop attributes that are not baton's (they may be what does not
	// fit), keep the reason, record the original id and size, and keep as
	// much of the body as fits.
	for k, v := range attrs {
		switch {
		case !strings.HasPrefix(k, "baton-"):
			delete(attrs, k)
		case len(v) > maxReasonBytes:
			attrs[k] = strings.ToValidUTF8(v[:maxReasonBytes], "")
		}
	}
	attrs[message.AttrOriginalID] = d.MessageID
	attrs[message.AttrOriginalBytes] = strconv.Itoa(len(d.Body))
	m.Body = nil
	room := max(queue.MaxBatchBytes-m.Size(), 0)
	body := d.Body[:min(room, len(d.Body))]
	m.Body = []byte(strings.ToValidUTF8(string(body), ""))
	return m
}
