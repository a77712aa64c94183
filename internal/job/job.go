// Package job holds the vocabulary shared by the core and the user's code:
// a job's definition (schedule, asset catalog, derived items, limits), the
// Processor the user implements, and the message that carries one item
// through the queue.
package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/ledger"
)

// Definition is a job: a schedule, an asset catalog, derived items and the
// limits the runtime applies. It is the one source of truth for the job,
// used by the local runtime, the Lambda functions and the template checks.
type Definition struct {
	Name     string
	Schedule string // AWS EventBridge expression: rate(...) or cron(...)
	Assets   []string
	Derived  []Derived
	Limits   Limits
}

// Derived is an item computed from other items of the same run (fan-in).
// It is enqueued once all its Inputs have SUCCEEDED.
type Derived struct {
	Name   string
	Inputs []string // assets of the catalog
}

// Limits are the timing and retry limits of a job.
type Limits struct {
	LeaseTTL       time.Duration // coordinator lease length
	ClockSkew      time.Duration // allowance when deciding a lease or item lease expired
	ItemLease      time.Duration // how long a claim holds an item
	MaxAttempts    int           // claims per item before DEAD
	FanOutBudget   time.Duration // optional cap on one coordinator invocation's fan-out; 0: none
	DeadlineMargin time.Duration // stop this long before the invocation deadline
	Concurrency    int           // items processed at once per consumer batch
}

// Validate reports the first problem with d, naming it.
func (d Definition) Validate() error {
	if err := ledger.ValidName("job", d.Name); err != nil {
		return err
	}
	if d.Schedule == "" {
		return fmt.Errorf("job %s: empty schedule", d.Name)
	}
	if len(d.Assets) == 0 {
		return fmt.Errorf("job %s: no assets", d.Name)
	}
	seen := map[string]bool{}
	for _, a := range d.Assets {
		if err := ledger.ValidName("asset", a); err != nil {
			return fmt.Errorf("job %s: %w", d.Name, err)
		}
		if seen[a] {
			return fmt.Errorf("job %s: asset %s listed twice", d.Name, a)
		}
		seen[a] = true
	}
	for _, x := range d.Derived {
		if err := ledger.ValidName("derived item", x.Name); err != nil {
			return fmt.Errorf("job %s: %w", d.Name, err)
		}
		if seen[x.Name] {
			return fmt.Errorf("job %s: derived item %s clashes with another name", d.Name, x.Name)
		}
		if len(x.Inputs) == 0 {
			return fmt.Errorf("job %s: derived item %s has no inputs", d.Name, x.Name)
		}
		for _, in := range x.Inputs {
			if !seen[in] || d.IsDerived(in) {
				return fmt.Errorf("job %s: derived item %s: input %q is not an asset of the catalog", d.Name, x.Name, in)
			}
		}
		seen[x.Name] = true
	}
	l := d.Limits
	switch {
	case l.LeaseTTL <= 0:
		return fmt.Errorf("job %s: limits: LeaseTTL must be positive", d.Name)
	case l.ItemLease <= 0:
		return fmt.Errorf("job %s: limits: ItemLease must be positive", d.Name)
	case l.MaxAttempts < 1:
		return fmt.Errorf("job %s: limits: MaxAttempts must be at least 1", d.Name)
	case l.Concurrency < 1:
		return fmt.Errorf("job %s: limits: Concurrency must be at least 1", d.Name)
	case l.ClockSkew < 0, l.FanOutBudget < 0, l.DeadlineMargin < 0:
		return fmt.Errorf("job %s: limits: ClockSkew, FanOutBudget and DeadlineMargin must not be negative", d.Name)
	}
	return nil
}

// IsDerived reports whether name is one of d's derived items.
func (d Definition) IsDerived(name string) bool {
	_, ok := d.DerivedItem(name)
	return ok
}

// DerivedItem returns the derived item called name.
func (d Definition) DerivedItem(name string) (Derived, bool) {
	for _, x := range d.Derived {
		if x.Name == name {
			return x, true
		}
	}
	return Derived{}, false
}

// HasItem reports whether name is an asset or a derived item of d.
func (d Definition) HasItem(name string) bool {
	for _, a := range d.Assets {
		if a == name {
			return true
		}
	}
	return d.IsDerived(name)
}

// DependentsOf returns the derived items that take asset as an input.
func (d Definition) DependentsOf(asset string) []Derived {
	var out []Derived
	for _, x := range d.Derived {
		for _, in := range x.Inputs {
			if in == asset {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// Task is what the processor gets for one item.
type Task struct {
	Key     ledger.ItemKey // the idempotency key; Key.String() is its text form
	Asset   string
	Nominal time.Time // the tick's nominal time
	Attempt int       // the current claim's attempt; writes conditioned on (Fence, Attempt) fence out stale workers
	Fence   int64     // the fence of the coordinator lease that enqueued the item
	// Inputs holds, for a derived item, each input's Result by asset.
	Inputs map[string][]byte
}

// Processor is the user's code for one job. Process must honour ctx's
// deadline. A nil error commits the result (at most once per item); an
// error wrapped with Permanent sends the item straight to DEAD; any other
// error is retried until the job's MaxAttempts.
type Processor interface {
	Process(ctx context.Context, t Task) (result []byte, err error)
}

// ProcessorFunc adapts a function to Processor.
type ProcessorFunc func(ctx context.Context, t Task) ([]byte, error)

// Process calls f.
func (f ProcessorFunc) Process(ctx context.Context, t Task) ([]byte, error) { return f(ctx, t) }

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// ErrUnknownJob is returned when a job name is not in the catalog.
var ErrUnknownJob = errors.New("unknown job")

// Job is a definition with its processor.
type Job struct {
	Definition
	Processor Processor
}

// Catalog is the set of jobs a deployment runs, by name.
type Catalog map[string]Job

// Lookup returns the job called name, or an error matching ErrUnknownJob
// that lists the known names.
func (c Catalog) Lookup(name string) (Job, error) {
	j, ok := c[name]
	if !ok {
		names := make([]string, 0, len(c))
		for n := range c {
			names = append(names, n)
		}
		return Job{}, fmt.Errorf("%w %q (known: %v)", ErrUnknownJob, name, names)
	}
	return j, nil
}
