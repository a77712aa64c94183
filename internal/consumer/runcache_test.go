package consumer

import (
	"testing"
	"time"

	"github.com/batonhq/baton/internal/jobspec"
	"github.com/batonhq/baton/internal/ledger"
)

// The run cache's key of a run id is its tick as jobspec.TickKey names
// it: two run ids share an entry exactly when their tick keys are equal
// (any generation; a submission whatever its nominal time; a tick at the
// nominal second, whatever its zone and its fraction of a second).
func TestTickOfAsTickKey(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	paris := time.FixedZone("CET", 3600)
	ids := []ledger.RunID{
		{Job: "fx", Nominal: at, Generation: 1},
		{Job: "fx", Nominal: at, Generation: 2},
		{Job: "fx", Nominal: at.In(paris), Generation: 1},
		{Job: "fx", Nominal: at.Add(500 * time.Millisecond), Generation: 1},
		{Job: "fx", Nominal: at.Add(time.Second), Generation: 1},
		{Job: "fx", Nominal: at.Add(-time.Nanosecond), Generation: 1},
		{Job: "fy", Nominal: at, Generation: 1},
		{Job: "fx", Submission: "s1", Generation: 1},
		{Job: "fx", Submission: "s1", Nominal: at, Generation: 3},
		{Job: "fx", Submission: "s2", Generation: 1},
		{Job: "fx+s1", Nominal: at, Generation: 1},
		{Job: "fx", Nominal: time.Unix(-1, 500_000_000), Generation: 1},
		{Job: "fx", Nominal: time.Unix(-1, 0), Generation: 1},
		{Job: "fx", Nominal: time.Unix(0, 0), Generation: 1},
		{Job: "fx", Generation: 1},
	}
	for _, a := range ids {
		for _, b := range ids {
			same, want := tickOf(a) == tickOf(b), jobspec.TickKey(a) == jobspec.TickKey(b)
			if same != want {
				t.Errorf("%v and %v: one entry %v, tick keys %q and %q", a, b, same, jobspec.TickKey(a), jobspec.TickKey(b))
			}
		}
	}
}
