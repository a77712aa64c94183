// Package rfc3339 parses RFC 3339 times strictly, as baton's keys, events
// and flags need them: every field with its full number of digits, an
// offset within ±14:00 (the range of real time zones), a year within the
// range the stores can hold, and nothing else around the time.
//
// time.Parse is more lenient than RFC 3339 (it takes one-digit hours and
// offsets up to ±23:59); a lenient parse would let one tick be spelled
// several ways and times outside what the ledger stores.
package rfc3339

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// The range of years Parse accepts: from the Unix epoch (the stores keep
// times as nanoseconds since it) to 2199, the last year of EventBridge's
// schedule grammar (and well before int64 nanoseconds overflow in 2262).
const (
	MinYear = 1970
	MaxYear = 2199
)

// maxOffset is the largest time-zone offset accepted.
const maxOffset = 14 * time.Hour

var layout = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$`)

// ErrInvalid matches every error Parse returns.
var ErrInvalid = errors.New("invalid RFC 3339 time")

// Parse parses s, "2006-01-02T15:04:05Z" with optional fractional seconds
// (up to nine digits) and a "Z" or "±hh:mm" offset, and returns it in UTC.
// The error matches ErrInvalid and says what is wrong.
func Parse(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("%w: empty", ErrInvalid)
	}
	if !layout.MatchString(s) {
		return time.Time{}, fmt.Errorf("%w: %q: want YYYY-MM-DDThh:mm:ss[.fraction] with Z or ±hh:mm, two digits per field", ErrInvalid, abbreviate(s))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %q: %v", ErrInvalid, s, err)
	}
	if _, off := t.Zone(); time.Duration(off)*time.Second > maxOffset || time.Duration(-off)*time.Second > maxOffset {
		return time.Time{}, fmt.Errorf("%w: %q: offset beyond ±14:00", ErrInvalid, s)
	}
	t = t.UTC()
	if y := t.Year(); y < MinYear || y > MaxYear {
		return time.Time{}, fmt.Errorf("%w: %q: year %d outside %d–%d", ErrInvalid, s, y, MinYear, MaxYear)
	}
	return t, nil
}

// abbreviate returns at most 64 bytes of s for an error message.
func abbreviate(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "…"
}
