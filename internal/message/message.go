// Package message is the body of an item's queue message: its version, its
// encoding and its strict decoder.
//
// # Versions
//
// Version 1 is an item message: the item's key, the fence of the
// coordinator that sent it, and whether the item is derived. Version 2
// is a shard message (hierarchical fan-out): it names a range of the
// run's items by position, [Expand.From, Expand.To), and the key of the
// range's first item (so that its run and job are found, and vouched for,
// as an item message's); the consumer that receives it sends the range's
// item messages (version 1) with its fence, then acknowledges it.
// Compatibility: this version reads both; a consumer of an earlier version
// refuses a version 2 body as malformed ("version 2, want 1") and
// dead-letters it with that reason, so a coordinator that sends shard
// messages is deployed with consumers that read them (one build serves
// both functions).
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

// Version is the version of an item message body.
const Version = 1

// ShardVersion is the version of a shard message body.
const ShardVersion = 2

// MaxExpand is the most items one shard message may name.
const MaxExpand = 1000

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
	// Expand, in a shard message (ShardVersion) only, is the range of
	// the run's items, by position in its item list, that the message
	// stands for; Key is the key of the first of them.
	Expand Range `json:"expand,omitzero"`
}

// Range is the items [From, To) of a run's item list.
type Range struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// IsShard reports whether m is a shard message: one with a range (Decode
// accepts a range in a ShardVersion body only).
func (m Message) IsShard() bool { return m.Expand.To > m.Expand.From }

// NewShard builds the shard message for the items [from, to) of the run
// of first, the key of item from.
func NewShard(first ledger.ItemKey, fence int64, from, to int) Message {
	return Message{Version: ShardVersion, Key: first.String(), Fence: fence, Expand: Range{From: from, To: to}}
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
var messageFields = []string{"v", "key", "fence", "derived", "expand"}

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
	switch m.Version {
	case Version:
		if _, ok := fields["expand"]; ok {
			return Message{}, fmt.Errorf("%w: field \"expand\" is only in shard messages (version %d)", ErrMalformed, ShardVersion)
		}
	case ShardVersion:
		if err := m.Expand.check(fields["expand"], m.Derived); err != nil {
			return Message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	default:
		return Message{}, fmt.Errorf("%w: field \"v\": version %d, want %d (item) or %d (shard)", ErrMalformed, m.Version, Version, ShardVersion)
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

// check validates the range of a shard message, whose body's "expand"
// member is raw (nil when absent).
func (r Range) check(raw json.RawMessage, derived bool) error {
	if raw == nil {
		return errors.New(`field "expand" is missing (version 2 is a shard message)`)
	}
	members, err := strictjson.Object(raw, []string{"from", "to"})
	if err != nil {
		return fmt.Errorf(`field "expand": %v`, err)
	}
	for name := range members {
		if name != "from" && name != "to" {
			return fmt.Errorf(`field "expand": unknown field %s`, strictjson.Quote(name))
		}
	}
	if members["to"] == nil {
		return errors.New(`field "expand": "to" is missing`)
	}
	switch {
	case derived:
		return errors.New(`field "derived": a shard message names assets only`)
	case r.From < 0:
		return fmt.Errorf(`field "expand": from %d is negative`, r.From)
	case r.To <= r.From:
		return fmt.Errorf(`field "expand": to %d is not above from %d`, r.To, r.From)
	case r.To-r.From > MaxExpand:
		return fmt.Errorf(`field "expand": %d items, at most %d`, r.To-r.From, MaxExpand)
	}
	return nil
}
