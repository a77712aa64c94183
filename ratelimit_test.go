package baton_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
)

func TestRateLimitDeclarations(t *testing.T) {
	t.Parallel()
	job := func(r ...baton.RateLimit) baton.Job {
		return baton.Job{Name: "j", Schedule: "rate(1 hour)", Assets: []string{"a"}, RateLimits: r,
			Processor: baton.ProcessorFunc(func(ctx context.Context, _ baton.Task) ([]byte, error) { return nil, nil })}
	}
	for _, ok := range [][]baton.RateLimit{
		{{Name: "api", Starts: 50, Per: time.Second}},
		{{Name: "gpu", InFlight: 4, PerItem: true}},
	} {
		_, err := baton.NewCatalog(job(ok...))
		require.NoError(t, err, "%+v", ok)
	}
	for want, bad := range map[string]baton.RateLimit{
		"InFlight excludes Starts, Per and Shards": {Name: "gpu", InFlight: 4, Starts: 10, Per: time.Second},
		"InFlight must not be negative":            {Name: "gpu", InFlight: -1},
		"Starts must be at least 1":                {Name: "api", Per: time.Second},
		"Per must be at least 1ms":                 {Name: "api", Starts: 1},
	} {
		_, err := baton.NewCatalog(job(bad))
		require.ErrorContains(t, err, want, "%+v", bad)
	}
}
