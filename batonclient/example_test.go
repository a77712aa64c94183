package batonclient_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonclient"
)

// Submit work on demand with a dedupe key, work it, wait for its run and
// read its results; the same key again returns the same run.
func Example() {
	dir, _ := os.MkdirTemp("", "baton")
	defer os.RemoveAll(dir)
	catalog := baton.MustCatalog(baton.Job{
		Name: "thumbs", Schedule: "rate(1 hour)", Assets: []string{"nightly"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			return []byte("thumbnail of " + string(t.Payload)), nil // the item's payload
		}),
	})
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

	sub, err := client.Submit(ctx, "thumbs", "upload-17", []baton.Item{
		{Name: "img-2", Payload: []byte("s3://uploads/2.png")},
		{Name: "img-1", Payload: []byte("s3://uploads/1.png")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("run:", sub.Run, "deduped:", sub.Deduped)

	st, err := client.Wait(ctx, sub.Run, 10*time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("state:", st.State, "succeeded:", st.Succeeded)
	for r, err := range client.Results(ctx, sub.Run) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(r.Item, r.State, string(r.Result))
	}

	again, _ := client.Submit(ctx, "thumbs", "upload-17", []baton.Item{{Name: "img-1"}})
	fmt.Println("again:", again.Run, "deduped:", again.Deduped)

	_, err = client.Submit(ctx, "thumbs", "upload 18", []baton.Item{{Name: "img-1"}})
	fmt.Println(strings.SplitN(err.Error(), ": want", 2)[0])
	// Output:
	// run: thumbs+upload-17#1 deduped: false
	// state: complete succeeded: 2
	// img-1 SUCCEEDED thumbnail of s3://uploads/1.png
	// img-2 SUCCEEDED thumbnail of s3://uploads/2.png
	// again: thumbs+upload-17#1 deduped: true
	// bad submission: job thumbs: dedupe key: invalid submission name "upload 18"
}
