package jobspec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/jobspec"
)

func TestRetryPolicyDelayIsFullJitterWithinBounds(t *testing.T) {
	t.Parallel()
	p := baton.RetryPolicy{MinDelay: time.Second, MaxDelay: 10 * time.Second}
	for attempt, ceil := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 60: 10 * time.Second} {
		lo, hi := time.Duration(1<<62), time.Duration(0)
		for range 2000 {
			d := jobspec.RetryDelay(p, attempt)
			require.GreaterOrEqual(t, d, p.MinDelay, "attempt %d", attempt)
			require.LessOrEqual(t, d, ceil, "attempt %d", attempt)
			lo, hi = min(lo, d), max(hi, d)
		}
		if ceil > p.MinDelay { // jittered: the draws spread over the range
			require.Less(t, lo, p.MinDelay+(ceil-p.MinDelay)/4, "attempt %d", attempt)
			require.Greater(t, hi, ceil-(ceil-p.MinDelay)/4, "attempt %d", attempt)
		}
	}
	require.Zero(t, jobspec.RetryDelay(baton.RetryPolicy{}, 3), "the zero policy keeps the engine's delay")
	require.LessOrEqual(t, jobspec.RetryDelay(baton.RetryPolicy{MinDelay: time.Hour}, 40), baton.MaxRetryDelay)
}

func TestItemRetryIsTheDerivedItemsOwn(t *testing.T) {
	t.Parallel()
	override := baton.RetryPolicy{MinDelay: time.Minute}
	j := baton.Job{Name: "j", Schedule: "rate(1 minute)", Assets: []string{"a"}, Processor: baton.ProcessorFunc(nil),
		Retry: baton.RetryPolicy{MinDelay: time.Second}, Derived: []baton.Derived{{Name: "d", Inputs: []string{"a"}, Retry: &override}, {Name: "e", Inputs: []string{"d"}}}}
	require.NoError(t, j.Validate())
	require.Equal(t, override, jobspec.ItemRetry(j, "d"))
	require.Equal(t, j.Retry, jobspec.ItemRetry(j, "e"), "a derived item without its own policy takes the job's")
	require.Equal(t, j.Retry, jobspec.ItemRetry(j, "a"))
}

func TestDependentsOfIsOneLevel(t *testing.T) {
	t.Parallel()
	j := baton.Job{Name: "j", Schedule: "rate(1 minute)", Assets: []string{"a1", "a2"}, Processor: baton.ProcessorFunc(nil),
		Derived: []baton.Derived{{Name: "X", Inputs: []string{"a1"}}, {Name: "Y", Inputs: []string{"X", "a2"}}, {Name: "Z", Inputs: []string{"a2", "a1"}}}}
	require.NoError(t, j.Validate())
	var got []string
	for _, d := range jobspec.DependentsOf(j, "a1") {
		got = append(got, d.Name)
	}
	require.Equal(t, []string{"X", "Z"}, got)
	require.Empty(t, jobspec.DependentsOf(j, "Z"))
}

func TestRetentionDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, baton.DefaultRetention, jobspec.Retention(baton.Job{}))
	require.Equal(t, time.Hour, jobspec.Retention(baton.Job{Retention: time.Hour}))
}

func TestRateLimitByName(t *testing.T) {
	t.Parallel()
	j := baton.Job{RateLimits: []baton.RateLimit{{Name: "a", Starts: 1, Per: time.Second}, {Name: "b", Starts: 2, Per: time.Second}}}
	r, ok := jobspec.RateLimit(j, "b")
	require.True(t, ok)
	require.Equal(t, 2, r.Starts)
	_, ok = jobspec.RateLimit(j, "c")
	require.False(t, ok)
}

func TestQueuesListEachQueuesJobsInOrder(t *testing.T) {
	t.Parallel()
	job := func(name, q string) baton.Job {
		return baton.Job{Name: name, Schedule: "rate(1 minute)", Assets: []string{"a"}, Processor: baton.ProcessorFunc(nil), Queue: baton.JobQueue{Name: q}}
	}
	c, err := baton.NewCatalog(job("b", "q"), job("a", "q"), job("c", ""), job("d", "r"))
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"q": {"a", "b"}, "r": {"d"}}, jobspec.Queues(c))
}
