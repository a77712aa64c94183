package baton_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
)

func TestParseKeysCanonicalOnly(t *testing.T) {
	t.Parallel()
	k, err := baton.ParseItemKey("fx@2026-11-21T12:01:00Z#12/EURUSD")
	require.NoError(t, err)
	require.Equal(t, baton.ItemKey{Run: baton.RunID{Job: "fx", Nominal: time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC), Generation: 12}, Asset: "EURUSD"}, k)

	k, err = baton.ParseItemKey("ingest+order-42#3/cam-0001")
	require.NoError(t, err)
	require.Equal(t, baton.ItemKey{Run: baton.RunID{Job: "ingest", Submission: "order-42", Generation: 3}, Asset: "cam-0001"}, k)
	require.True(t, k.Run.Submitted())
	require.Equal(t, "ingest+order-42", jobspec.TickKey(k.Run))
	require.Equal(t, "ingest+order-42#3/cam-0001", k.String())

	bad := map[string]string{
		"fx+order 42#1/EURUSD":                       `invalid submission name "order 42"`,
		"f x+order-42#1/EURUSD":                      `invalid job name "f x"`,
		"fx+order-42#0/EURUSD":                       "without sign or leading zero",
		"fx+#1/EURUSD":                               "invalid submission name",
		"fx@2026-11-21T13:01:00+01:00#1/EURUSD":      "not canonical, want fx@2026-11-21T12:01:00Z#1",
		"fx@2026-11-21T12:01:00.000Z#1/EURUSD":       "not canonical",
		"fx@2026-11-21T12:01:00.5Z#1/EURUSD":         "not canonical",
		"fx@2026-11-21T2:01:00Z#1/EURUSD":            "bad time",
		"fx@2026-11-21T12:01:00Z#01/EURUSD":          "without sign or leading zero",
		"fx@2026-11-21T12:01:00Z#+1/EURUSD":          "without sign or leading zero",
		"fx@2026-11-21T12:01:00Z#0/EURUSD":           "without sign or leading zero",
		"fx@2026-11-21T12:01:00Z#99999999999/EURUSD": "generation",
		"fx@2999-01-01T00:00:00Z#1/EURUSD":           "year 2999 outside 1970–2199",
		"fx@1969-12-31T23:59:00Z#1/EURUSD":           "year 1969",
		"fx@2026-11-21T12:01:00Z#1":                  "want <run id>/<asset>",
		"fx@2026-11-21T12:01:00Z#1/EUR USD":          "invalid asset name",
	}
	for s, want := range bad {
		_, err := baton.ParseItemKey(s)
		require.ErrorContains(t, err, want, s)
	}
	// A huge key is refused without being quoted whole.
	huge := "fx@2026-11-21T12:01:00Z#1/" + strings.Repeat("A", 200_000)
	_, err = baton.ParseItemKey(huge)
	require.ErrorContains(t, err, "longer than 256 bytes")
	require.Less(t, len(err.Error()), 300)
}

// Whatever ParseItemKey accepts prints back to the same text: one item,
// one key.
func FuzzParseItemKey(f *testing.F) {
	for _, s := range []string{"fx@2026-11-21T12:01:00Z#1/EURUSD", "a@1970-01-01T00:00:00Z#999/b", "fx@2026-11-21T13:01:00+01:00#1/EURUSD", "x+y#1/z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := baton.ParseItemKey(s)
		if err != nil {
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if k.String() != s {
			t.Fatalf("%q parsed to %q", s, k.String())
		}
		if _, err := baton.ParseRunID(k.Run.String()); err != nil {
			t.Fatalf("run of %q: %v", s, err)
		}
	})
}
