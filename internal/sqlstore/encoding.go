package sqlstore

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// ScanFunc reads the columns of one row into dest: the Scan method of a
// *sql.Row, *sql.Rows, pgx.Row or pgx.Rows.
type ScanFunc func(dest ...any) error

// ReadFunc runs an engine's read of one row and scans its columns into
// dest. It reports found = false, with a nil error, when there is no
// such row, and returns other errors as the engine translates them.
type ReadFunc func(dest ...any) (found bool, err error)

// Nanos is t as stored: Unix nanoseconds, 0 for the zero time.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Time is the time stored as n (Nanos), in UTC; 0 is the zero time.
func Time(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// SameTime reports whether stored and t are the same instant as stored
// (to the nanosecond, the zero time as 0).
func SameTime(stored, t time.Time) bool { return Nanos(stored) == Nanos(t) }

// EncodeAttributes returns a message's attributes as stored: "" for
// none, else a JSON object. Keys and values must be valid UTF-8.
func EncodeAttributes(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return "", fmt.Errorf("attribute %q: not valid UTF-8", k)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode attributes: %w", err)
	}
	return string(b), nil
}

// DecodeAttributes returns the attributes stored as s (EncodeAttributes):
// nil for "".
func DecodeAttributes(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	if m, ok := plainAttributes(s); ok {
		return m, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("decode attributes: %w", err)
	}
	return m, nil
}

// plainAttributes decodes s without a JSON decoder when it is an object
// of plain strings only: {"k":"v",...} with no white space, and no
// escape, control character or invalid UTF-8 in any string (as
// EncodeAttributes writes the attributes every receive reads: trace
// context, ids). It returns what json.Unmarshal returns for such input,
// the values sharing s's memory; ok is false for any other input, which
// DecodeAttributes gives the decoder.
func plainAttributes(s string) (map[string]string, bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	m := map[string]string{}
	rest := s[1 : len(s)-1]
	for rest != "" {
		k, after, ok := plainString(rest)
		if !ok || after == "" || after[0] != ':' {
			return nil, false
		}
		v, after, ok := plainString(after[1:])
		if !ok {
			return nil, false
		}
		m[k] = v // the last of duplicate keys, as json.Unmarshal keeps
		if after == "" {
			break
		}
		if after[0] != ',' || after == "," {
			return nil, false
		}
		rest = after[1:]
	}
	return m, true
}

// plainString reads the JSON string that starts s, when it holds no
// escape, control character or invalid UTF-8, and returns its text and
// what follows it.
func plainString(s string) (text, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			text = s[1:i]
			return text, s[i+1:], utf8.ValidString(text)
		case c == '\\' || c < 0x20:
			return "", "", false
		}
	}
	return "", "", false
}
