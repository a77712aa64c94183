// Package message is the body of an item's queue message: its version, its
// encoding and its strict decoder.
package message

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/strictjson"
)

// Version is the version of the message body this code writes.
const Version = 1

// Message attribute names, set alongside the body so operators can filter
// and inspect without decoding it.
const (
	AttrKey   = queue.AttrKey // the item key: routes a message to its job's queue
	AttrFence = "baton-fence"
	AttrError = "baton-error" // set on messages forwarded to the dead-letter queue
	// AttrOriginalID and AttrOriginalBytes are set on a dead letter whose
	// body was cut to fit the queue: the id the message had and its
	// body's size before the cut.
	AttrOriginalID    = "baton-original-id"
	AttrOriginalBytes = "baton-original-bytes"
)

// ErrMalformed matches every error Decode returns.
var ErrMalformed = errors.New("malformed message")

// Message is the body of one item's queue message. Key is the idempotency
// key; it is carried whole so that a message redriven from a dead-letter
// queue is still recognised.
type Message struct {
	Version int    `json:"v"`
	Key     string `json:"key"`
	Fence   int64  `json:"fence"`
	Derived bool   `json:"derived,omitempty"`
}

// New builds the message for key.
func New(key ledger.ItemKey, fence int64, derived bool) Message {
	return Message{Version: Version, Key: key.String(), Fence: fence, Derived: derived}
}

// ItemKey parses m.Key.
func (m Message) ItemKey() (ledger.ItemKey, error) { return ledger.ParseItemKey(m.Key) }

// Encode returns the queue message for m.
func (m Message) Encode() []byte {
	b, _ := json.Marshal(m) // cannot fail: plain fields
	return b
}

// QueueMessage returns m as an outgoing queue message with its attributes.
func (m Message) QueueMessage() queue.Message {
	return queue.Message{Body: m.Encode(), Attributes: map[string]string{
		AttrKey:   m.Key,
		AttrFence: strconv.FormatInt(m.Fence, 10),
	}}
}

// messageFields are the body's field names, in their one spelling.
var messageFields = []string{"v", "key", "fence", "derived"}

// describe names the field of a type mismatch, without quoting the value.
func describe(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("field %q: want a JSON %s, got %s", te.Field, te.Type.Kind(), te.Value)
	}
	return "invalid JSON"
}

// Decode parses and validates a message body. Every error matches
// ErrMalformed and names what is wrong.
func Decode(body []byte) (Message, error) {
	fields, err := strictjson.Object(body, messageFields)
	if err != nil {
		return Message{}, fmt.Errorf("%w: body is not a baton item message: %v", ErrMalformed, err)
	}
	for name := range fields {
		if !slices.Contains(messageFields, name) {
			return Message{}, fmt.Errorf("%w: unknown field %s", ErrMalformed, strictjson.Quote(name))
		}
	}
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return Message{}, fmt.Errorf("%w: body is not a baton item message: %s", ErrMalformed, describe(err))
	}
	if m.Version != Version {
		return Message{}, fmt.Errorf("%w: field \"v\": version %d, want %d", ErrMalformed, m.Version, Version)
	}
	if m.Key == "" {
		return Message{}, fmt.Errorf("%w: field \"key\" is missing", ErrMalformed)
	}
	if _, err := ledger.ParseItemKey(m.Key); err != nil {
		return Message{}, fmt.Errorf("%w: field \"key\": %v", ErrMalformed, err)
	}
	if m.Fence < 0 {
		return Message{}, fmt.Errorf("%w: field \"fence\" is negative", ErrMalformed)
	}
	return m, nil
}
