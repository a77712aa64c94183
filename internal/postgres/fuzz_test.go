package postgres

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/sqlstore"
)

// Receipt handles come back from callers: any text is refused or names a
// positive message id, never panics. (A handle naming an id is not yet
// valid: the statements also compare it whole with the stored one.)
func FuzzReceiptID(f *testing.F) {
	for _, s := range []string{"", "-", "abc-1", "x-0", "x--5", "x-9223372036854775807", "x-9223372036854775808", "ABCDEF-12", "-12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		id, ok := sqlstore.ReceiptID(h)
		if !ok {
			return
		}
		require.Positive(t, id)
	})
}

// Attributes are stored as JSON text: what encodes decodes back the same;
// what does not encode is refused with a reason; stored text that is not
// an object of strings is an error, never a panic.
func FuzzAttributes(f *testing.F) {
	f.Add("baton-key", "fx@2026-11-21T12:01:00Z#1/EURUSD", `{"a":"b"}`)
	f.Add("k", "a\x00b", `[]`)
	f.Add("\xff", "v", `{"a":1}`)
	f.Fuzz(func(t *testing.T, k, v, stored string) {
		enc, err := encodeAttributes(map[string]string{k: v})
		if err != nil {
			require.False(t, utf8.ValidString(k) && utf8.ValidString(v) && !containsNUL(k) && !containsNUL(v), "refused %q=%q: %v", k, v, err)
		} else {
			got, err := sqlstore.DecodeAttributes(enc)
			require.NoError(t, err)
			require.Equal(t, map[string]string{k: v}, got)
		}
		_, _ = sqlstore.DecodeAttributes(stored)
	})
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}
