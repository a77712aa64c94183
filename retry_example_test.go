package baton_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/batonhq/baton"
)

// fetch gets url; a 429 or 503 with a Retry-After header (in seconds)
// becomes baton.RetryAfter, so that the item's next attempt waits as long
// as the provider asked, and a 404 is Permanent: retrying cannot help.
func fetch(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, baton.Permanent(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err // retried under the job's RetryPolicy
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		err := fmt.Errorf("GET %s: %s", url, resp.Status)
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil {
			return nil, baton.RetryAfter(time.Duration(s)*time.Second, err)
		}
		return nil, err
	case resp.StatusCode == http.StatusNotFound:
		return nil, baton.Permanent(fmt.Errorf("GET %s: %s", url, resp.Status))
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return []byte(resp.Status), nil
}

// A feed fetcher that honours Retry-After, with backoff for the other
// failures: the job's RetryPolicy spaces its retries (1 s, then up to 2 s,
// 4 s, … capped at a minute, with full jitter), and a provider's
// Retry-After replaces that delay for the attempt it answers.
func ExampleRetryAfter() {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer provider.Close()

	job := baton.Job{
		Name: "feeds", Schedule: "rate(1 minute)", Assets: []string{"reuters"},
		Retry: baton.RetryPolicy{MinDelay: time.Second, MaxDelay: time.Minute},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			return fetch(ctx, provider.URL+"/"+t.Asset)
		}),
	}
	if _, err := baton.NewCatalog(job); err != nil {
		fmt.Println(err)
		return
	}
	_, err := job.Processor.Process(context.Background(), baton.Task{Asset: "reuters"})
	d, ok := baton.RetryAfterOf(err)
	fmt.Println(errors.Unwrap(err) != nil, "| retry after:", d, ok, "| permanent:", baton.IsPermanent(err))
	// Output:
	// true | retry after: 30s true | permanent: false
}
