// Package strictjson decodes the top level of a JSON object strictly, as
// baton's decoders of outside input need: encoding/json matches field
// names case-insensitively, keeps the last of duplicate keys and (with
// Unmarshal into a struct via a Decoder) may leave trailing data unread.
// Object refuses all three, naming the key or the problem. Value is the
// one check of a whole payload that every reader of an event file shares:
// one JSON value and nothing after it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// ErrNotObject matches the error of Object for input that is not one JSON
// object (with nothing after it but white space).
var ErrNotObject = errors.New("not a JSON object")

// Object returns the members of the JSON object b. It refuses duplicate
// keys, trailing data, and a key that differs from one of known only in
// case (known are the names the caller reads, in their one spelling).
// The members' values are slices of b (capped: an append to one copies).
func Object(b []byte, known []string) (map[string]json.RawMessage, error) {
	if fields, ok, err := validObject(b, known); ok {
		return fields, err
	}
	return decodeObject(b, known)
}

// validObject is Object for the input it reads most often, one valid
// JSON object (json.Valid), without a decoder: json.Valid checks the
// syntax without allocating, and the members are then found by a walk
// that may rely on it. ok is false for any other input, which
// decodeObject reads (and names what is wrong with). The members are
// checked in their order, as decodeObject checks them, so that both
// return the same error.
func validObject(b []byte, known []string) (fields map[string]json.RawMessage, ok bool, err error) {
	if !json.Valid(b) {
		return nil, false, nil
	}
	i := skipSpace(b, 0)
	if b[i] != '{' {
		return nil, false, nil
	}
	fields = map[string]json.RawMessage{}
	for i = skipSpace(b, i+1); b[i] != '}'; i = skipSpace(b, i) {
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		end := skipString(b, i)
		key, ok := unquoteKey(b[i:end], known)
		if !ok {
			return nil, false, nil
		}
		i = skipSpace(b, skipSpace(b, end)+1) // past the colon
		end = skipValue(b, i)
		v := json.RawMessage(b[i:end:end])
		i = end
		if err := checkMember(fields, key, known); err != nil {
			return nil, true, err
		}
		fields[key] = v
	}
	return fields, true, nil
}

// checkMember refuses key when fields has it already, or when it differs
// from one of known only in case.
func checkMember(fields map[string]json.RawMessage, key string, known []string) error {
	if _, dup := fields[key]; dup {
		return fmt.Errorf("field %s appears twice", Quote(key))
	}
	for _, f := range known {
		if key != f && strings.EqualFold(key, f) {
			return fmt.Errorf("field %s: names are case-sensitive, want %q", Quote(key), f)
		}
	}
	return nil
}

// skipSpace returns the index of the first byte of b from i on that is
// not JSON white space (len(b) if none).
func skipSpace(b []byte, i int) int {
	for i < len(b) && strings.IndexByte(wsChars, b[i]) >= 0 {
		i++
	}
	return i
}

// skipString returns the index after the valid JSON string at b[i].
func skipString(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++ // the escaped byte
		}
	}
	return i + 1
}

// skipValue returns the index after the valid JSON value at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && strings.IndexByte(",}] \t\r\n", b[i]) < 0 { // a number, true, false or null
		i++
	}
	return i
}

// unquoteKey is the text of the valid JSON string raw (quotes included),
// as the decoder reads it: escapes, and bytes that are not UTF-8, are
// left to encoding/json. A key of known is that string (no copy).
func unquoteKey(raw []byte, known []string) (string, bool) {
	plain := true
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		text := raw[1 : len(raw)-1]
		for _, k := range known {
			if string(text) == k {
				return k, true
			}
		}
		return string(text), true
	}
	var key string
	if err := json.Unmarshal(raw, &key); err != nil {
		return "", false
	}
	return key, true
}

// decodeObject is Object with a decoder: for any input, valid or not.
func decodeObject(b []byte, known []string) (map[string]json.RawMessage, error) {
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
		if err := checkMember(fields, key, known); err != nil {
			return nil, err
		}
		fields[key] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, ErrNotObject
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		if err := trailing(b, end); err != nil {
			return nil, err
		}
		return nil, ErrNotObject
	}
	return fields, nil
}

// ErrNotOneValue matches the error of Value.
var ErrNotOneValue = errors.New("not one JSON value")

// Value reports whether b is one JSON value and nothing else (white space
// around it aside): the payload an event must be. It returns nil exactly
// when json.Valid(b) is true, and otherwise an error matching
// ErrNotOneValue that says what is wrong: an empty payload, a syntax
// error and its byte offset, or what follows the value, as in
//
//	unexpected "junk" after the JSON value at byte 57
//
// (offsets count from 0). The Lambda runtime's decoder reads the first
// value of a payload and ignores the rest; callers that read an event
// from a file check it with Value first, so that a file with two values,
// or one and a stray brace, is refused instead of run on its first half.
func Value(b []byte) error {
	if len(bytes.TrimLeft(b, wsChars)) == 0 {
		return fmt.Errorf("%w: empty", ErrNotOneValue)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return fmt.Errorf("%w: %s at byte %d", ErrNotOneValue, strings.TrimPrefix(se.Error(), "json: "), max(se.Offset-1, 0))
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("%w: the JSON value is cut short at byte %d", ErrNotOneValue, len(b))
		}
		return fmt.Errorf("%w: %v", ErrNotOneValue, err)
	}
	if err := trailing(b, dec.InputOffset()); err != nil {
		return fmt.Errorf("%w: %v", ErrNotOneValue, err)
	}
	return nil
}

// wsChars is JSON's white space.
const wsChars = " \t\r\n"

// trailing returns nil when b holds only white space from end on, else an
// error naming what follows the JSON value there (up to its first white
// space) and its offset.
func trailing(b []byte, end int64) error {
	rest := b[min(int(end), len(b)):]
	text := bytes.TrimLeft(rest, wsChars)
	if len(text) == 0 {
		return nil
	}
	at := int(end) + len(rest) - len(text)
	if i := bytes.IndexAny(text, wsChars); i >= 0 {
		text = text[:i]
	}
	return fmt.Errorf("unexpected %s after the JSON value at byte %d", Quote(string(text)), at)
}

// Quote quotes s for an error message, cut to a bounded length.
func Quote(s string) string {
	const max = 64
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:max], len(s))
}
