package batonclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonclient"
)

// A feed fetcher throttled per host, honouring Retry-After: a keyed limit
// gives each host 2 requests a second whatever the number of hosts and
// consumers, and a provider's 429 with Retry-After becomes the item's
// retry delay. Here every feed's first request is answered 429 with
// "Retry-After: 1"; each feed succeeds at its second attempt, a second or
// more later.
func Example_feedFetcher() {
	var mu sync.Mutex
	seen := map[string]bool{}
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := !seen[r.URL.Path]
		seen[r.URL.Path] = true
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(w, "<rss/>")
	}))
	defer provider.Close()

	var failedAt sync.Map // feed → when its 429 came
	fetch := baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
		feed, err := url.Parse(string(t.Payload))
		if err != nil {
			return nil, baton.Permanent(err)
		}
		// The feed's host is the limit's key: chosen here, at run time.
		if err := t.WaitKey(ctx, "per-host", feed.Host); err != nil {
			return nil, err
		}
		// Every feed is served by the test provider; a real fetcher GETs feed itself.
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, provider.URL+"/"+t.Asset, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			failedAt.Store(t.Asset, time.Now())
			secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			return nil, baton.RetryAfter(time.Duration(secs)*time.Second, errors.New(resp.Status))
		}
		at, _ := failedAt.Load(t.Asset)
		waited := time.Since(at.(time.Time)) >= time.Second
		return fmt.Appendf(nil, "%s, attempt %d, waited its Retry-After: %t", resp.Status, t.Attempt, waited), nil
	})
	catalog, err := baton.NewCatalog(baton.Job{
		Name: "feeds", Assets: []string{"placeholder"}, Processor: fetch, // on demand: no Schedule
		RateLimits: []baton.RateLimit{{Name: "per-host", Starts: 2, Per: time.Second, Keyed: true}},
		Retry:      baton.RetryPolicy{MinDelay: time.Second, MaxDelay: time.Minute},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	dir, _ := os.MkdirTemp("", "baton")
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := batonclient.Open(ctx, catalog, &batonclient.Options{Store: filepath.Join(dir, "baton.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	work, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- client.Work(work) }()
	defer func() { stop(); <-done }()

	sub, err := client.Submit(ctx, "feeds", "morning", []baton.Item{
		{Name: "bbc-world", Payload: []byte("https://feeds.bbci.co.uk/news/world/rss.xml")},
		{Name: "bbc-tech", Payload: []byte("https://feeds.bbci.co.uk/news/technology/rss.xml")},
		{Name: "nyt-home", Payload: []byte("https://rss.nytimes.com/services/xml/rss/nyt/HomePage.xml")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := client.Wait(ctx, sub.Run, 20*time.Millisecond); err != nil {
		fmt.Println(err)
		return
	}
	for r, err := range client.Results(ctx, sub.Run) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(r.Item, r.State, string(r.Result))
	}
	// Output:
	// bbc-tech SUCCEEDED 200 OK, attempt 2, waited its Retry-After: true
	// bbc-world SUCCEEDED 200 OK, attempt 2, waited its Retry-After: true
	// nyt-home SUCCEEDED 200 OK, attempt 2, waited its Retry-After: true
}
