package baton_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
)

func TestRetryAfterIsFoundThroughWrapping(t *testing.T) {
	t.Parallel()
	base := errors.New("HTTP 429")
	err := baton.RetryAfter(3*time.Second, base)
	require.ErrorIs(t, err, base)
	require.Equal(t, "HTTP 429", err.Error())
	d, ok := baton.RetryAfterOf(fmtWrap(err))
	require.True(t, ok)
	require.Equal(t, 3*time.Second, d)
	_, ok = baton.RetryAfterOf(base)
	require.False(t, ok)
	require.NoError(t, baton.RetryAfter(time.Second, nil))
	require.True(t, baton.IsPermanent(baton.RetryAfter(time.Second, baton.Permanent(base))), "Permanent wins")
}

func fmtWrap(err error) error { return errors.Join(errors.New("fetch"), err) }

func TestRetryPolicyValidation(t *testing.T) {
	t.Parallel()
	job := func(p baton.RetryPolicy) baton.Job {
		return baton.Job{Name: "j", Schedule: "rate(1 minute)", Assets: []string{"a"}, Processor: baton.ProcessorFunc(nil), Retry: p}
	}
	for p, want := range map[baton.RetryPolicy]string{
		{MinDelay: -time.Second}:                          "job j: retry policy: MinDelay -1s: must be positive",
		{MaxDelay: time.Second}:                           "job j: retry policy: MinDelay 0s: must be positive",
		{MinDelay: time.Second, MaxDelay: -time.Second}:   "job j: retry policy: MaxDelay -1s: must not be negative",
		{MinDelay: time.Minute, MaxDelay: time.Second}:    "job j: retry policy: MinDelay 1m0s is above MaxDelay 1s",
		{MinDelay: time.Second, MaxDelay: 13 * time.Hour}: "job j: retry policy: delays must be at most 12h0m0s",
	} {
		err := job(p).Validate()
		require.ErrorContains(t, err, want, "%+v", p)
	}
	require.NoError(t, job(baton.RetryPolicy{MinDelay: time.Second}).Validate())
	bad := baton.RetryPolicy{MinDelay: -1}
	j := baton.Job{Name: "j", Schedule: "rate(1 minute)", Assets: []string{"a"}, Processor: baton.ProcessorFunc(nil),
		Derived: []baton.Derived{{Name: "d", Inputs: []string{"a"}, Retry: &bad}}}
	require.ErrorContains(t, j.Validate(), "job j: derived d: retry policy: MinDelay -1ns: must be positive")
}
