package ui

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/ledger"
)

func TestParseAction(t *testing.T) {
	t.Parallel()
	c := fx.Catalog(nil)
	run := ledger.RunID{Job: fx.Name, Nominal: time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC), Generation: 2}
	for _, a := range []Action{
		{Kind: ReplayTick, Job: fx.Name, Tick: run.Nominal},
		{Kind: ReplayTick, Job: fx.Name, Tick: run.Nominal, Force: true},
		{Kind: ReplayItem, Run: run, Asset: fx.DXY, Force: true},
		{Kind: Cancel, Run: run},
		{Kind: Cancel, Run: run, Asset: "EURUSD"},
		{Kind: Redrive},
		{Kind: ReleaseLease, Job: fx.Name, Owner: "host/42/coordinator", Fence: 7},
	} {
		got, err := ParseAction(c, a.Values())
		require.NoError(t, err, a.Values().Encode())
		require.Equal(t, a, got)
	}
	for q, want := range map[string]string{
		"":                          `unknown action ""`,
		"kind=drop-table":           `unknown action "drop-table"`,
		"kind=redrive&kind=redrive": "field kind given 2 times",
		"kind=redrive&max=3":        `redrive takes no field "max"`,
		"kind=replay-tick&job=fx":   "replay-tick needs the field tick",
		"kind=replay-tick&job=nope&tick=2026-11-21T12:01:00Z":           `nope`,
		"kind=replay-tick&job=fx&tick=yesterday":                        "tick:",
		"kind=replay-tick&job=fx&tick=2026-11-21T12:01:00Z&force=yes":   `force: want true or false, got "yes"`,
		"kind=replay-item&run=fx@2026-11-21T12:01:00Z%231&asset=BTCUSD": `job fx has no item "BTCUSD"`,
		"kind=replay-item&run=fx@2026-11-21T12:01:00Z&asset=EURUSD":     "run id",
		"kind=cancel&run=fx@2026-11-21T12:01:00Z%231&asset=A&asset=B":   "field asset given 2 times",
		"kind=release-lease&job=fx&owner=x&fence=0":                     "fence: want a positive number",
		"kind=release-lease&job=fx&owner=x%0Ay&fence=2":                 "owner: not a lease owner",
		"kind=release-lease&job=fx&owner=x&fence=2&force-live=true":     `release-lease takes no field "force-live"`,
		"kind=cancel&run=fx@2026-11-21T12:01:00Z%231&token=a&token=b":   "field token given 2 times",
	} {
		v, err := url.ParseQuery(q)
		require.NoError(t, err)
		_, err = ParseAction(c, v)
		require.ErrorContains(t, err, want, q)
	}
}

// FuzzParseAction: any form either decodes to an action whose values
// decode back to it, or is refused with an error; it never panics.
func FuzzParseAction(f *testing.F) {
	c := fx.Catalog(nil)
	for _, q := range []string{
		"kind=redrive",
		"kind=replay-tick&job=fx&tick=2026-11-21T12:01:00Z&force=true",
		"kind=replay-item&run=fx@2026-11-21T12:01:00Z%232&asset=DXY",
		"kind=cancel&run=fx@2026-11-21T12:01:00Z%231",
		"kind=release-lease&job=fx&owner=a%2Fb&fence=3",
		"kind=cancel&run=%3Cscript%3E",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		v, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		a, err := ParseAction(c, v)
		if err != nil {
			require.NotEmpty(t, err.Error())
			return
		}
		again, err := ParseAction(c, a.Values())
		require.NoError(t, err, a.Values().Encode())
		require.Equal(t, a, again)
		require.NotEmpty(t, a.Title())
	})
}
