// Package jobs is the catalog of jobs this deployment runs: the one place
// the local runtime, the operator CLI and the Lambda functions look jobs up.
// To add a job, write its definition and processor in a package of its own
// (internal/tickfactory is the model) and add it to Catalog.
package jobs

import (
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/bars"
	"github.com/batonhq/baton/internal/tickfactory"
)

// Options tune the jobs' processors. The zero value is production.
type Options struct {
	// Latency is the reference job's simulated provider latency.
	Latency time.Duration
}

// Catalog returns every job, by name. store is the bars store the
// reference job writes to.
func Catalog(store bars.Store, o *Options) *baton.Catalog {
	var tf *tickfactory.Options
	if o != nil {
		tf = &tickfactory.Options{Latency: o.Latency}
	}
	return tickfactory.Catalog(store, tf)
}
