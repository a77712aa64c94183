package rfc3339_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/rfc3339"
)

func TestParse(t *testing.T) {
	t.Parallel()
	ok := map[string]time.Time{
		"2026-11-21T12:01:00Z":                time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC),
		"2026-11-21T12:01:00.5Z":              time.Date(2026, 11, 21, 12, 1, 0, 5e8, time.UTC),
		"2026-11-21T13:01:00+01:00":           time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC),
		"2026-11-21T00:01:00-14:00":           time.Date(2026, 11, 21, 14, 1, 0, 0, time.UTC),
		"1970-01-01T00:00:00Z":                time.Unix(0, 0).UTC(),
		"2199-12-31T23:59:59.999999999Z":      time.Date(2199, 12, 31, 23, 59, 59, 999999999, time.UTC),
		"2026-11-21T12:01:00.123456789+00:00": time.Date(2026, 11, 21, 12, 1, 0, 123456789, time.UTC),
	}
	for s, want := range ok {
		got, err := rfc3339.Parse(s)
		require.NoError(t, err, s)
		require.True(t, want.Equal(got), "%s: got %s", s, got)
		require.Equal(t, time.UTC, got.Location())
	}
	bad := map[string]string{
		"":                                "empty",
		"2026-11-21T2:01:00Z":             "two digits per field",
		"2026-11-21t12:01:00Z":            "two digits per field",
		"2026-11-21 12:01:00Z":            "two digits per field",
		"2026-11-21T12:01:00":             "two digits per field",
		"2026-11-21T12:01:00+23:59":       "offset beyond ±14:00",
		"2026-11-21T12:01:00+1:00":        "two digits per field",
		"1969-12-31T23:59:59Z":            "year 1969 outside 1970–2199",
		"1970-01-01T00:30:00+01:00":       "year 1969 outside 1970–2199",
		"2999-01-01T00:00:00Z":            "year 2999 outside 1970–2199",
		"2026-02-30T12:00:00Z":            "day out of range",
		"2026-11-21T24:00:00Z":            "hour out of range",
		" 2026-11-21T12:01:00Z":           "two digits per field",
		"2026-11-21T12:01:00Z\n":          "two digits per field",
		"2026-11-21T12:01:00.Z":           "two digits per field",
		"2026-11-21T12:01:00.1234567890Z": "two digits per field",
	}
	for s, want := range bad {
		_, err := rfc3339.Parse(s)
		require.Error(t, err, s)
		require.True(t, errors.Is(err, rfc3339.ErrInvalid), s)
		require.ErrorContains(t, err, want, s)
	}
}

// Whatever Parse accepts is a UTC time in range whose RFC 3339 form
// parses back to it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"2026-11-21T12:01:00Z", "2026-11-21T12:01:00.5+14:00", "1970-01-01T00:00:00Z", "2199-12-31T23:59:59Z", "2026-11-21T2:01:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := rfc3339.Parse(s)
		if err != nil {
			if !errors.Is(err, rfc3339.ErrInvalid) {
				t.Fatalf("%q: error %v does not match ErrInvalid", s, err)
			}
			return
		}
		if got.Location() != time.UTC || got.Year() < rfc3339.MinYear || got.Year() > rfc3339.MaxYear {
			t.Fatalf("%q: got %s", s, got)
		}
		back, err := rfc3339.Parse(got.Format(time.RFC3339Nano))
		if err != nil || !back.Equal(got) {
			t.Fatalf("%q: round trip %s → %v, %v", s, got, back, err)
		}
	})
}
