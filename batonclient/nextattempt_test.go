package batonclient_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonclient"
)

// Results carries a waiting item's next attempt: the consumer's now
// plus the Retry-After its processor answered, with the last error.
func TestResultsShowTheNextAttempt(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	catalog, err := baton.NewCatalog(baton.Job{
		Name: "feeds", Assets: []string{"unused"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) {
			return nil, baton.RetryAfter(time.Hour, errors.New("503 Service Unavailable"))
		}),
	})
	require.NoError(t, err)
	client, err := batonclient.Open(t.Context(), catalog, &batonclient.Options{Store: filepath.Join(t.TempDir(), "baton.db"),
		NowFunc: func() time.Time { return now }})
	require.NoError(t, err)
	defer client.Close()
	work, stop := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- client.Work(work) }()
	defer func() { stop(); <-done }()

	sub, err := client.Submit(t.Context(), "feeds", "k1", []baton.Item{{Name: "a", Payload: []byte("x")}})
	require.NoError(t, err)
	var got baton.ItemResult
	require.Eventually(t, func() bool {
		for r, err := range client.Results(t.Context(), sub.Run) {
			require.NoError(t, err)
			got = r
		}
		return got.State == "FAILED"
	}, 10*time.Second, 20*time.Millisecond)
	require.True(t, now.Add(time.Hour).Equal(got.NextAttempt), "next attempt %s", got.NextAttempt)
	require.Empty(t, got.WaitLimit, "a retry delay")
	require.Equal(t, "503 Service Unavailable", got.Error)
	require.Equal(t, 1, got.Attempts)
}
