package awsdynamodb

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/effect"
	"github.com/batonhq/baton/internal/ledger"
)

func TestKeys(t *testing.T) {
	t.Parallel()
	nominal := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	run := ledger.RunID{Job: "fx", Nominal: nominal, Generation: 2}
	for _, tc := range []struct {
		got  key
		want key
	}{
		{leaseKey("fx"), key{"LEASE#fx", "LEASE"}},
		{runKey("fx", nominal), key{"RUN#fx", "2026-11-21T12:01:00Z"}},
		{runKey("fx", nominal.In(time.FixedZone("x", -5*3600))), key{"RUN#fx", "2026-11-21T12:01:00Z"}},
		{itemKey(ledger.ItemKey{Run: run, Asset: "EURUSD"}), key{"ITEMS#fx@2026-11-21T12:01:00Z#2", "EURUSD"}},
		{effectKey("fx", "EURUSD/2026-11-21T12:01:00Z"), key{"EFFECT#fx#EURUSD/2026-11-21T12:01:00Z", "EFFECT"}},
		{effectKey("fx", "a#b"), key{"EFFECT#fx#a#b", "EFFECT"}},
		{effectKey("fx", "ключ €"), key{"EFFECT#fx#ключ €", "EFFECT"}},
	} {
		require.Equal(t, tc.want, tc.got)
		got, err := keyOf(tc.got.attrs())
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
	_, err := keyOf(record{attrPK: str("x")})
	require.Error(t, err)
}

// Sort keys of times order as the times do, which ListRuns relies on.
func TestTimeSKOrder(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var times []time.Time
	for _, d := range []time.Duration{0, time.Second, time.Minute, 9 * time.Hour, 10 * time.Hour, 24 * time.Hour * 40, 24 * time.Hour * 400} {
		times = append(times, base.Add(d), base.Add(-d))
	}
	sks := make([]string, len(times))
	for i, tm := range times {
		sks[i] = timeSK(tm)
		back, err := parseTimeSK(sks[i])
		require.NoError(t, err)
		require.True(t, tm.Equal(back))
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	sort.Strings(sks)
	for i := range times {
		require.Equal(t, timeSK(times[i]), sks[i])
	}
	_, err := parseTimeSK("LEASE")
	require.Error(t, err)
}

func TestBeforeSK(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	require.Equal(t, "2026-11-21T12:01:00Z", beforeSK(at))
	// A bound inside a second admits that second: 12:01:00 is before 12:01:00.5.
	require.Equal(t, "2026-11-21T12:01:01Z", beforeSK(at.Add(500*time.Millisecond)))
}

func TestTrimPrefix(t *testing.T) {
	t.Parallel()
	got, err := trimPrefix("RUN#fx", prefixRun)
	require.NoError(t, err)
	require.Equal(t, "fx", got)
	_, err = trimPrefix("LEASE#fx", prefixRun)
	require.Error(t, err)
}

// The longest effect pk fits DynamoDB's 2048 bytes, with the longest job
// name baton.ValidName admits.
func TestEffectKeyLength(t *testing.T) {
	t.Parallel()
	job := strings.Repeat("j", maxNameBytes)
	require.NoError(t, baton.ValidName("job", job))
	require.Error(t, baton.ValidName("job", job+"j"), "maxNameBytes is ValidName's limit")
	k := strings.Repeat("é", effect.MaxKeyBytes/2)
	require.NoError(t, effect.ValidateKey(job, k))
	pk := effectKey(job, k).pk
	require.Len(t, pk, maxEffectPK)
	require.LessOrEqual(t, len(pk), 2048)
}
