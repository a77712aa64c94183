// Package strictjson decodes the top level of a JSON object strictly, as
// baton's decoders of outside input need: encoding/json matches field
// names case-insensitively, keeps the last of duplicate keys and (with
// Unmarshal into a struct via a Decoder) may leave trailing data unread.
// Object refuses all three, naming the key or the problem.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrNotObject matches the error of Object for input that is not one JSON
// object (with nothing after it but white space).
var ErrNotObject = errors.New("not a JSON object")

// Object returns the members of the JSON object b. It refuses duplicate
// keys, trailing data, and a key that differs from one of known only in
// case (known are the names the caller reads, in their one spelling).
func Object(b []byte, known []string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, ErrNotObject
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, ErrNotObject
		}
		key, _ := tok.(string) // inside an object, a token here is a key
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, ErrNotObject
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("field %s appears twice", Quote(key))
		}
		for _, f := range known {
			if key != f && strings.EqualFold(key, f) {
				return nil, fmt.Errorf("field %s: names are case-sensitive, want %q", Quote(key), f)
			}
		}
		fields[key] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, ErrNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	return fields, nil
}

// Quote quotes s for an error message, cut to a bounded length.
func Quote(s string) string {
	const max = 64
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:max], len(s))
}
