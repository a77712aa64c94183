package consumer

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// maxReasonBytes bounds the reason attribute of a dead letter.
const maxReasonBytes = 1024

// forward sends d's body and attributes to the dead-letter queue with the
// reason in message.AttrError.
func (c *Consumer) forward(ctx context.Context, d queue.Delivery, reason error) error {
	attrs := maps.Clone(d.Attributes)
	if attrs == nil {
		attrs = map[string]string{}
	}
	msg := reason.Error()
	if len(msg) > maxReasonBytes {
		msg = strings.ToValidUTF8(msg[:maxReasonBytes], "")
	}
	attrs[message.AttrError] = msg
	if _, err := queue.SendAll(ctx, c.DeadLetter, []queue.Message{{Body: d.Body, Attributes: attrs}}, nil); err != nil {
		return fmt.Errorf("forward message %s: %w", d.MessageID, err)
	}
	return nil
}
