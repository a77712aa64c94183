package ratelimit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ratelimit"
)

// Any key text gets a record name of its own: no two (limit, key) pairs
// share one, none has a second '#', and the key comes back out.
func TestKeyedNamesNeverCollide(t *testing.T) {
	t.Parallel()
	keys := []string{"a", "a#b", "a%23b", "a b", "a+b", "a/b", "https://feeds.example.com/x?y=1#frag", "日本", "#", "%", "0", "SLOT"}
	seen := map[string][2]string{}
	for _, name := range []string{"hosts", "hosts-2"} {
		for _, k := range keys {
			rec := ratelimit.KeyedName(name, k)
			prev, dup := seen[rec]
			require.False(t, dup, "%q for %q/%q and %v", rec, name, k, prev)
			seen[rec] = [2]string{name, k}
			require.Equal(t, 1, countHash(rec), rec)
			n, key, ok := ratelimit.KeyOf(rec)
			require.True(t, ok)
			require.Equal(t, name, n)
			require.Equal(t, k, key)
		}
	}
	_, _, ok := ratelimit.KeyOf("hosts")
	require.False(t, ok)
}

func countHash(s string) int {
	n := 0
	for _, r := range s {
		if r == '#' {
			n++
		}
	}
	return n
}

func FuzzKeyedName(f *testing.F) {
	for _, k := range []string{"a", "a#b", "日本", "%zz", "+ "} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		rec := ratelimit.KeyedName("limit", key)
		name, got, ok := ratelimit.KeyOf(rec)
		if !ok || name != "limit" || got != key {
			t.Fatalf("KeyOf(KeyedName(%q)) = %q, %q, %v", key, name, got, ok)
		}
	})
}
