// Package message is the body of an item's queue message: its version, its
// encoding and its strict decoder.
//
// # Versions
//
// Version 1 is {"v":1,"key":…,"fence":…,"derived":…}: the message of an
// item of a job whose items are constants (Job.Assets, Job.Derived).
// Version 2 adds "page" (required): the index of the stored page of the
// run's item list that holds the item, for a job whose items are computed
// when its run opens (Job.Items); the consumer checks membership and reads
// the payload from that page. Compatibility rule: a writer writes version
// 1 whenever the item has no page, so a message of a constant item is
// read by consumers of either version, and messages in flight across an
// upgrade keep working; Decode reads both. Only items of run-time lists,
// which earlier versions cannot process anyway, travel as version 2.
//
// Version 3 is a shard message (hierarchical fan-out):
// {"v":3,"key":…,"fence":…,"expand":{"from":…,"to":…}} names a range of
// the run's items by position, [Expand.From, Expand.To), and the key of
// the range's first item (so that its run and job are found, and vouched
// for, as an item message's); the consumer that receives it sends the
// range's item messages (version 1) with its fence, then acknowledges it.
// Compatibility: this version reads all three; a consumer of an earlier
// version refuses a version 3 body as malformed ("version 3, want 1" or
// "version 3, want 1 or 2") and dead-letters it with that reason, so a
// coordinator that sends shard messages is deployed with consumers that
// read them (one build serves both functions). The shard message of a
// bulk job (baton.Job.Bulk) is the same version 3 body: its consumer runs
// the range's items in place rather than sending their messages, and
// sends the version 1 message of each item it hands over. A consumer
// built before Bulk expands it instead, which runs the same items: the
// mode is the consumer's, never the format's.
//
// Version 4 is a page shard message, the shard message of a run whose
// items are a stored list (a run-time list or a submission):
// {"v":4,"key":…,"fence":…,"page":…} stands for every item of the run's
// stored page "page", and its key is the key of the page's first item.
// The consumer that receives it reads the page (vouched for as an item
// message's run, generation and fence) and sends the page's item messages
// (version 2, naming the page) with its fence, or, for a bulk job, runs
// the page's items in place. Compatibility: this version reads all four;
// a consumer of an earlier version refuses a version 4 body as malformed
// ("version 4, want 1, 2 (item) or 3 (shard)") and dead-letters it with
// that reason, so, as for version 3, a coordinator that sends page shards
// is deployed with consumers that read them (one build serves both
// functions). A coordinator sends them for the pages past its expansion
// threshold (Coordinator.ExpandFrom, 1,000 items by default), and for
// every page of a bulk job with a run-time list or of a job that declares
// ExpectedItems of the threshold or more, whatever the list's size;
// never for a submission to a priority class. Deploy consumers of this
// version before, or with, a coordinator that runs such jobs: the runs of
// other jobs' lists of up to 1,000 items travel as version 2 only, which
// every consumer since run-time lists reads.
package message

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/strictjson"
)

// Version is the version of the item message body with a page (see the
// package doc); Version1 is the item message without one.
const (
	Version  = 2
	Version1 = 1
)

// ShardVersion is the version of a shard message body; PageShardVersion
// that of a page shard message (a stored page of a run's item list).
const (
	ShardVersion     = 3
	PageShardVersion = 4
)

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
	// Page is the index of the stored page that holds the item (version
	// 2), or the page a page shard message stands for (version 4); 0 in
	// versions 1 and 3, where it is not encoded.
	Page int `json:"page"`
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

// IsShard reports whether m is a shard message: one that stands for
// several items, by a range of a catalog's positions (version 3) or by a
// stored page (version 4, PageShard).
func (m Message) IsShard() bool {
	return m.Version == PageShardVersion || m.Expand.To > m.Expand.From
}

// PageShard reports whether m is a page shard message (version 4): it
// stands for every item of the stored page m.Page.
func (m Message) PageShard() bool { return m.Version == PageShardVersion }

// NewPageShard builds the page shard message (version 4) for the stored
// page page of the run of first, the key of the page's first item.
func NewPageShard(first ledger.ItemKey, fence int64, page int) Message {
	return Message{Version: PageShardVersion, Key: first.String(), Fence: fence, Page: page}
}

// NewShard builds the shard message (version 3) for the items [from, to)
// of the run of first, the key of item from.
func NewShard(first ledger.ItemKey, fence int64, from, to int) Message {
	return Message{Version: ShardVersion, Key: first.String(), Fence: fence, Expand: Range{From: from, To: to}}
}

// New builds the version 1 message for key, an item without a page.
func New(key ledger.ItemKey, fence int64, derived bool) Message {
	return Message{Version: Version1, Key: key.String(), Fence: fence, Derived: derived}
}

// NewPaged builds the version 2 message for key, an item of a run-time
// list held by stored page page.
func NewPaged(key ledger.ItemKey, fence int64, page int) Message {
	return Message{Version: Version, Key: key.String(), Fence: fence, Page: page}
}

// Paged reports whether m names the stored page of its item (version 2).
func (m Message) Paged() bool { return m.Version == Version }

// v1 is the body of version 1: no page.
type v1 struct {
	Version int    `json:"v"`
	Key     string `json:"key"`
	Fence   int64  `json:"fence"`
	Derived bool   `json:"derived,omitempty"`
}

// v3 is the body of version 3, a shard message: a range, no page.
type v3 struct {
	Version int    `json:"v"`
	Key     string `json:"key"`
	Fence   int64  `json:"fence"`
	Expand  Range  `json:"expand"`
}

// ItemKey parses m.Key.
func (m Message) ItemKey() (ledger.ItemKey, error) { return ledger.ParseItemKey(m.Key) }

// Encode returns the queue message for m.
func (m Message) Encode() []byte {
	if m.Version == ShardVersion {
		b, _ := json.Marshal(v3{Version: m.Version, Key: m.Key, Fence: m.Fence, Expand: m.Expand}) // cannot fail: plain fields
		return b
	}
	if !m.Paged() && !m.PageShard() {
		b, _ := json.Marshal(v1{Version: m.Version, Key: m.Key, Fence: m.Fence, Derived: m.Derived}) // cannot fail: plain fields
		return b
	}
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
var messageFields = []string{"v", "key", "fence", "derived", "page", "expand"}

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
	m, _, err := DecodeKey(body)
	return m, err
}

// DecodeKey is Decode, also returning the message's key as parsed
// (Message.ItemKey), which the validation parses anyway.
func DecodeKey(body []byte) (Message, ledger.ItemKey, error) {
	var none ledger.ItemKey
	fields, err := strictjson.Object(body, messageFields)
	if err != nil {
		return Message{}, none, fmt.Errorf("%w: body is not a baton item message: %v", ErrMalformed, err)
	}
	for name := range fields {
		if !slices.Contains(messageFields, name) {
			return Message{}, none, fmt.Errorf("%w: unknown field %s", ErrMalformed, strictjson.Quote(name))
		}
	}
	m, plain := plainMessage(fields)
	if !plain {
		m = Message{}
		if err := json.Unmarshal(body, &m); err != nil {
			return Message{}, none, fmt.Errorf("%w: body is not a baton item message: %s", ErrMalformed, describe(err))
		}
	}
	rawPage, hasPage := fields["page"]
	if hasPage && string(rawPage) == "null" {
		return Message{}, none, fmt.Errorf("%w: field \"page\": want a JSON int, got null", ErrMalformed)
	}
	_, hasExpand := fields["expand"]
	switch {
	case m.Version != Version1 && m.Version != Version && m.Version != ShardVersion && m.Version != PageShardVersion:
		return Message{}, none, fmt.Errorf("%w: field \"v\": version %d, want %d, %d (item), %d (shard) or %d (page shard)",
			ErrMalformed, m.Version, Version1, Version, ShardVersion, PageShardVersion)
	case m.Version != ShardVersion && hasExpand:
		return Message{}, none, fmt.Errorf("%w: field \"expand\" is only in shard messages (version %d)", ErrMalformed, ShardVersion)
	case m.Version == ShardVersion:
		if hasPage {
			return Message{}, none, fmt.Errorf("%w: field \"page\" is not part of version %d (a shard message)", ErrMalformed, ShardVersion)
		}
		if err := m.Expand.check(fields["expand"], m.Derived); err != nil {
			return Message{}, none, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	case m.Version == Version1 && hasPage:
		return Message{}, none, fmt.Errorf("%w: field \"page\" is not part of version 1", ErrMalformed)
	case (m.Version == Version || m.Version == PageShardVersion) && !hasPage:
		return Message{}, none, fmt.Errorf("%w: field \"page\" is missing (required in version %d)", ErrMalformed, m.Version)
	case m.Page < 0:
		return Message{}, none, fmt.Errorf("%w: field \"page\" is negative", ErrMalformed)
	case (m.Version == Version || m.Version == PageShardVersion) && m.Derived:
		return Message{}, none, fmt.Errorf("%w: field \"derived\": an item of a stored page is never derived", ErrMalformed)
	}
	if m.Key == "" {
		return Message{}, none, fmt.Errorf("%w: field \"key\" is missing", ErrMalformed)
	}
	key, err := ledger.ParseItemKey(m.Key)
	if err != nil {
		return Message{}, none, fmt.Errorf("%w: field \"key\": %v", ErrMalformed, err)
	}
	if m.Fence < 0 {
		return Message{}, none, fmt.Errorf("%w: field \"fence\" is negative", ErrMalformed)
	}
	return m, key, nil
}

// check validates the range of a shard message, whose body's "expand"
// member is raw (nil when absent).
func (r Range) check(raw json.RawMessage, derived bool) error {
	if raw == nil {
		return errors.New(`field "expand" is missing (version 3 is a shard message)`)
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

// plainMessage is what json.Unmarshal reads into a Message from a body
// whose members (fields, as strictjson.Object returns them, every name
// one of messageFields) are plain: integers for v, fence and page, a
// string without escapes for key, true or false for derived, and no
// expand. ok is false for any other body, which Unmarshal reads (and
// names what is wrong with).
func plainMessage(fields map[string]json.RawMessage) (m Message, ok bool) {
	for name, raw := range fields {
		switch name {
		case "v":
			m.Version, ok = plainInt(raw)
		case "key":
			m.Key, ok = plainString(raw)
		case "fence":
			var f int
			f, ok = plainInt(raw)
			m.Fence = int64(f)
		case "derived":
			m.Derived, ok = plainBool(raw)
		case "page":
			m.Page, ok = plainInt(raw)
		default:
			ok = false
		}
		if !ok {
			return Message{}, false
		}
	}
	return m, true
}

// plainInt reads a JSON integer (digits, maybe a minus) that fits an
// int64, as an int.
func plainInt(raw []byte) (int, bool) {
	if len(raw) == 0 || len(raw) > 19 {
		return 0, false
	}
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return int(n), err == nil && int64(int(n)) == n
}

// plainString reads a JSON string without escapes whose bytes are UTF-8.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	text := raw[1 : len(raw)-1]
	for _, c := range text {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(text) {
		return "", false
	}
	return string(text), true
}

// plainBool reads true or false.
func plainBool(raw []byte) (bool, bool) {
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}
