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
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("decode attributes: %w", err)
	}
	return m, nil
}
