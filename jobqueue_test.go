package baton_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
)

func TestJobQueueValidation(t *testing.T) {
	t.Parallel()
	job := func(name string, q baton.JobQueue) baton.Job {
		return baton.Job{Name: name, Schedule: "rate(1 minute)", Assets: []string{"a"}, Queue: q,
			Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	}
	for q, want := range map[baton.JobQueue]string{
		{MaxConcurrency: 4}:                    "MaxConcurrency 4 without a Name",
		{Name: "q", MaxConcurrency: 1}:         "MaxConcurrency 1, want 2..1000",
		{Name: "q", MaxConcurrency: 1001}:      "MaxConcurrency 1001, want 2..1000",
		{Name: "no spaces", MaxConcurrency: 2}: `invalid queue name "no spaces"`,
		{Priority: 1}:                          "Priority 1 without a Name",
		{Name: "q", Priority: -1}:              "Priority -1 must not be negative",
	} {
		require.ErrorContains(t, job("j", q).Validate(), want, "%+v", q)
	}
	require.NoError(t, job("j", baton.JobQueue{}).Validate(), "the shared queue")
	require.NoError(t, job("j", baton.JobQueue{Name: "q"}).Validate())
	require.Equal(t, baton.DefaultQueueConcurrency, baton.JobQueue{Name: "q"}.Concurrency())

	_, err := baton.NewCatalog(job("a", baton.JobQueue{Name: "q", MaxConcurrency: 3}), job("b", baton.JobQueue{Name: "q", MaxConcurrency: 5}))
	require.ErrorContains(t, err, "jobs a and b share queue q with different MaxConcurrency (3, 5)")
	_, err = baton.NewCatalog(job("a", baton.JobQueue{Name: "q", Priority: 1}), job("b", baton.JobQueue{Name: "q", Priority: 2}))
	require.ErrorContains(t, err, "jobs a and b share queue q with different Priority (1, 2)")
	_, err = baton.NewCatalog(job("a", baton.JobQueue{Name: "q", MaxConcurrency: 3}), job("b", baton.JobQueue{Name: "q", MaxConcurrency: 3}), job("c", baton.JobQueue{}))
	require.NoError(t, err)
}
