package baton

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrUnknownJob matches Catalog.Lookup's error for an unknown name.
var ErrUnknownJob = errors.New("unknown job")

// Catalog is the jobs one deployment runs; it is safe for concurrent use.
type Catalog struct {
	jobs  map[string]Job
	names []string // sorted
}

// NewCatalog validates the jobs; the error names the first wrong one.
func NewCatalog(jobs ...Job) (*Catalog, error) {
	if len(jobs) == 0 {
		return nil, errors.New("catalog: no jobs")
	}
	c := &Catalog{jobs: make(map[string]Job, len(jobs))}
	queues := map[string]Job{} // by queue name: the first job naming it
	for _, j := range jobs {
		if err := j.Validate(); err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		if q := j.Queue; q.Name != "" {
			if other, ok := queues[q.Name]; ok && other.Queue.Concurrency() != q.Concurrency() {
				return nil, fmt.Errorf("catalog: jobs %s and %s share queue %s with different MaxConcurrency (%d, %d)",
					other.Name, j.Name, q.Name, other.Queue.Concurrency(), q.Concurrency())
			}
			if other, ok := queues[q.Name]; ok && other.Queue.Priority != q.Priority {
				return nil, fmt.Errorf("catalog: jobs %s and %s share queue %s with different Priority (%d, %d)",
					other.Name, j.Name, q.Name, other.Queue.Priority, q.Priority)
			}
			queues[q.Name] = j
		}
		if _, dup := c.jobs[j.Name]; dup {
			return nil, fmt.Errorf("catalog: job %s listed twice", j.Name)
		}
		j.Assets = append([]string(nil), j.Assets...)
		j.Derived = cloneDerived(j.Derived)
		j.Chains = append([]Chain(nil), j.Chains...)
		j.RateLimits = append([]RateLimit(nil), j.RateLimits...)
		j.Limits = j.Limits.withDefaults()
		j.items = make(map[string]struct{}, len(j.Assets)+len(j.Derived))
		for _, name := range j.Assets {
			j.items[name] = struct{}{}
		}
		for _, x := range j.Derived {
			j.items[x.Name] = struct{}{}
		}
		c.jobs[j.Name] = j
		c.names = append(c.names, j.Name)
	}
	sort.Strings(c.names)
	if err := c.checkChains(); err != nil {
		return nil, err
	}
	if err := c.checkRateLimits(); err != nil {
		return nil, err
	}
	return c, nil
}

// MustCatalog is NewCatalog that panics on an error.
func MustCatalog(jobs ...Job) *Catalog {
	c, err := NewCatalog(jobs...)
	if err != nil {
		panic(err)
	}
	return c
}

func cloneDerived(ds []Derived) []Derived {
	if ds == nil {
		return nil
	}
	out := make([]Derived, len(ds))
	for i, d := range ds {
		out[i] = Derived{Name: d.Name, Inputs: append([]string(nil), d.Inputs...), Lease: d.Lease}
		if d.Retry != nil {
			r := *d.Retry
			out[i].Retry = &r
		}
	}
	return out
}

// Lookup returns the job called name, or ErrUnknownJob.
func (c *Catalog) Lookup(name string) (Job, error) {
	j, ok := c.jobs[name]
	if !ok {
		return Job{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownJob, name, strings.Join(c.names, ", "))
	}
	return j, nil
}

// Names returns the jobs' names, sorted.
func (c *Catalog) Names() []string { return append([]string(nil), c.names...) }

// Jobs returns the jobs, sorted by name.
func (c *Catalog) Jobs() []Job {
	out := make([]Job, len(c.names))
	for i, n := range c.names {
		out[i] = c.jobs[n]
	}
	return out
}

// Len returns the number of jobs.
func (c *Catalog) Len() int { return len(c.names) }
