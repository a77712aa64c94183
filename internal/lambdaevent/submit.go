package lambdaevent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/strictjson"
)

// ErrBadSubmission matches every error DecodeSubmission and DecodeItems
// return.
var ErrBadSubmission = errors.New("bad submission")

// SubmissionVersion is the version of the submission event this code
// reads and writes.
const SubmissionVersion = 1

// Submission is a decoded submission event: work submitted on demand
// for a job, under a dedupe key.
//
// Its shape (version 1), sent to the coordinator function like a trigger:
//
//	{"submit": {"v": 1, "job": "fx", "key": "order-42", "items": [
//	  {"name": "EURUSD", "payload": {"depth": 5}},
//	  {"name": "GBPUSD", "payload_base64": "AAEC"},
//	  {"name": "USDJPY"}
//	]}}
//
// An item's payload is any JSON value, stored as its JSON text (so a
// processor decodes it as JSON), or bytes given in standard base64 under
// payload_base64; at most one of the two, at most baton.MaxPayload bytes.
// A later version gets a new "v"; this decoder refuses any other.
type Submission struct {
	Job   string
	Key   string
	Items []baton.Item
}

var (
	envelopeFields   = []string{"submit"}
	submissionFields = []string{"v", "job", "key", "items"}
	itemFields       = []string{"name", "payload", "payload_base64"}
)

// IsSubmission reports whether payload is a JSON object with a "submit"
// member: a submission, to be decoded by DecodeSubmission rather than as
// a trigger.
func IsSubmission(payload []byte) bool {
	fields, err := strictjson.Object(payload, nil)
	if err != nil {
		return false
	}
	_, ok := fields["submit"]
	return ok
}

// DecodeSubmission decodes a submission event strictly, naming what is
// wrong: unknown or misspelled fields, a version other than 1, a job not
// among jobs, a bad key, and any problem of its items (see DecodeItems).
// A payload is never quoted in an error.
func DecodeSubmission(payload []byte, jobs []string) (Submission, error) {
	env, err := strictjson.Object(payload, envelopeFields)
	if err != nil {
		return Submission{}, fmt.Errorf("%w: %v", ErrBadSubmission, err)
	}
	for name := range env {
		if !slices.Contains(envelopeFields, name) {
			return Submission{}, fmt.Errorf("%w: unknown field %s beside \"submit\"", ErrBadSubmission, strictjson.Quote(name))
		}
	}
	fields, err := strictjson.Object(env["submit"], submissionFields)
	if err != nil {
		return Submission{}, fmt.Errorf("%w: field \"submit\": %v", ErrBadSubmission, err)
	}
	for name := range fields {
		if !slices.Contains(submissionFields, name) {
			return Submission{}, fmt.Errorf("%w: unknown field %s", ErrBadSubmission, strictjson.Quote(name))
		}
	}
	var v int
	if raw, ok := fields["v"]; !ok {
		return Submission{}, fmt.Errorf("%w: field \"v\" is missing", ErrBadSubmission)
	} else if err := json.Unmarshal(raw, &v); err != nil || v != SubmissionVersion {
		return Submission{}, fmt.Errorf("%w: field \"v\": want %d", ErrBadSubmission, SubmissionVersion)
	}
	var s Submission
	for _, f := range []struct {
		name string
		dst  *string
	}{{"job", &s.Job}, {"key", &s.Key}} {
		raw, ok := fields[f.name]
		if !ok {
			return Submission{}, fmt.Errorf("%w: field %q is missing", ErrBadSubmission, f.name)
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return Submission{}, fmt.Errorf("%w: field %q: want a JSON string", ErrBadSubmission, f.name)
		}
	}
	if !slices.Contains(jobs, s.Job) {
		return Submission{}, fmt.Errorf("%w: field \"job\": unknown job %s", ErrBadSubmission, strictjson.Quote(s.Job))
	}
	if err := baton.ValidName("submission", s.Key); err != nil {
		return Submission{}, fmt.Errorf("%w: field \"key\": %v", ErrBadSubmission, err)
	}
	raw, ok := fields["items"]
	if !ok {
		return Submission{}, fmt.Errorf("%w: field \"items\" is missing", ErrBadSubmission)
	}
	if s.Items, err = DecodeItems(raw); err != nil {
		return Submission{}, fmt.Errorf("field \"items\": %w", err)
	}
	return s, nil
}

// maxItems bounds the items DecodeItems reads (the coordinator's
// MaxSubmissionItems).
const maxItems = 100_000

// DecodeItems decodes a JSON array of submission items ({"name", and
// "payload" or "payload_base64"}), the shape of a submission event's
// "items" and of the file `baton submit --items` reads. It refuses, naming
// the item by index: a non-array, a non-object, unknown fields, a missing
// or invalid name, both payload forms, bad base64, a payload over
// baton.MaxPayload, more than 100,000 items, none at all.
func DecodeItems(b []byte) ([]baton.Item, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("%w: items: want a JSON array", ErrBadSubmission)
	}
	var items []baton.Item
	for dec.More() {
		i := len(items)
		if i == maxItems {
			return nil, fmt.Errorf("%w: items: more than %d", ErrBadSubmission, maxItems)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: item %d: invalid JSON", ErrBadSubmission, i)
		}
		it, err := decodeItem(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: item %d: %v", ErrBadSubmission, i, err)
		}
		items = append(items, it)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: items: invalid JSON after item %d", ErrBadSubmission, len(items))
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("%w: items: trailing data after the array", ErrBadSubmission)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: items: none", ErrBadSubmission)
	}
	return items, nil
}

func decodeItem(raw []byte) (baton.Item, error) {
	fields, err := strictjson.Object(raw, itemFields)
	if err != nil {
		return baton.Item{}, err
	}
	for name := range fields {
		if !slices.Contains(itemFields, name) {
			return baton.Item{}, fmt.Errorf("unknown field %s", strictjson.Quote(name))
		}
	}
	var it baton.Item
	rawName, ok := fields["name"]
	if !ok {
		return it, errors.New(`field "name" is missing`)
	}
	if err := json.Unmarshal(rawName, &it.Name); err != nil {
		return it, errors.New(`field "name": want a JSON string`)
	}
	if err := baton.ValidName("item", it.Name); err != nil {
		return it, err
	}
	p, hasP := fields["payload"]
	b64, hasB := fields["payload_base64"]
	switch {
	case hasP && hasB:
		return it, errors.New(`both "payload" and "payload_base64": give one`)
	case hasP:
		var buf bytes.Buffer
		if err := json.Compact(&buf, p); err != nil {
			return it, errors.New(`field "payload": invalid JSON`)
		}
		it.Payload = buf.Bytes()
	case hasB:
		var s string
		if err := json.Unmarshal(b64, &s); err != nil {
			return it, errors.New(`field "payload_base64": want a JSON string`)
		}
		if it.Payload, err = base64.StdEncoding.Strict().DecodeString(s); err != nil {
			return it, errors.New(`field "payload_base64": not standard base64`)
		}
	}
	if len(it.Payload) > baton.MaxPayload {
		return it, fmt.Errorf("payload of %d bytes, at most %d (baton.MaxPayload)", len(it.Payload), baton.MaxPayload)
	}
	if len(it.Payload) == 0 {
		it.Payload = nil
	}
	return it, nil
}
