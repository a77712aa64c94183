// Package jobspec answers the runtime's questions about a job's
// declaration (a baton.Job and its Catalog) that a user who writes jobs
// never asks: an item's retry policy and its next delay, a derived item's
// dependents, a limit by name, a job's retention, the jobs of each job
// queue. They live here rather than as methods of the root package so
// that its documentation shows what a user needs and nothing else.
package jobspec

import (
	"math/rand/v2"
	"time"

	"github.com/batonhq/baton"
)

// Retention returns j.Retention, or baton.DefaultRetention when it is 0.
func Retention(j baton.Job) time.Duration {
	if j.Retention > 0 {
		return j.Retention
	}
	return baton.DefaultRetention
}

// ItemRetry returns the retry policy of j's item called name: a derived
// item's own when it sets one, else the job's.
func ItemRetry(j baton.Job, name string) baton.RetryPolicy {
	if x, ok := DerivedItem(j, name); ok && x.Retry != nil {
		return *x.Retry
	}
	return j.Retry
}

// RetryDelay draws the delay of p before the attempt after attempt (1,
// 2, …): exponential backoff with full jitter, at least p.MinDelay and at
// most p.MaxDelay (0: baton.MaxRetryDelay). The zero policy gives 0, the
// engine's own delay.
func RetryDelay(p baton.RetryPolicy, attempt int) time.Duration {
	if p.IsZero() {
		return 0
	}
	lo, hi := p.MinDelay, p.MaxDelay
	if hi == 0 {
		hi = baton.MaxRetryDelay
	}
	ceil := lo
	for i := 1; i < attempt && ceil < hi; i++ {
		ceil *= 2
	}
	ceil = min(ceil, hi)
	if ceil <= lo {
		return lo
	}
	return lo + rand.N(ceil-lo+1)
}

// DependentsOf returns j's derived items that take asset as an input
// (one level; Downstream follows them all).
func DependentsOf(j baton.Job, asset string) []baton.Derived {
	var out []baton.Derived
	for _, x := range j.Derived {
		for _, in := range x.Inputs {
			if in == asset {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// RateLimit returns j's rate limit called name.
func RateLimit(j baton.Job, name string) (baton.RateLimit, bool) {
	for _, r := range j.RateLimits {
		if r.Name == name {
			return r, true
		}
	}
	return baton.RateLimit{}, false
}

// Queues returns the jobs of each job queue of c, by queue name, each
// queue's jobs in the catalog's order (by name).
func Queues(c *baton.Catalog) map[string][]string {
	out := map[string][]string{}
	for _, j := range c.Jobs() {
		if q := j.Queue; q.Name != "" {
			out[q.Name] = append(out[q.Name], j.Name)
		}
	}
	return out
}
