package batontest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batontest"
)

// A summary job's processor, run by a Chain once a run of a run-time list
// finishes, reads that run's results through Task.ParentResults; in a
// unit test, Runs stands in for the engine.
func ExampleRuns() {
	summarise := baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
		ok, failed := 0, 0
		for r, err := range t.ParentResults(ctx) {
			if err != nil {
				return nil, err
			}
			if r.State == "SUCCEEDED" {
				ok++
			} else {
				failed++
			}
		}
		return fmt.Appendf(nil, "%d fetched, %d failed", ok, failed), nil
	})

	parent := baton.RunID{Job: "feeds", Nominal: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), Generation: 1}
	runs := batontest.Runs{parent: {
		{Item: "feed-01", State: "SUCCEEDED", Result: []byte("42")},
		{Item: "feed-02", State: "DEAD", Error: "HTTP 404"},
		{Item: "feed-03", State: "SUCCEEDED", Result: []byte("7")},
	}}
	task := batontest.NewEffects().NewTask(batontest.TaskParams{Job: "summary", Asset: "total", Parent: parent, Runs: runs})
	out, err := summarise.Process(context.Background(), task)
	fmt.Println(string(out), err)

	// A task whose run no Chain started has no parent to read.
	_, err = summarise.Process(context.Background(), batontest.NewEffects().NewTask(batontest.TaskParams{Job: "summary", Asset: "total"}))
	fmt.Println(err)
	// Output:
	// 2 fetched, 1 failed <nil>
	// the task's run has no parent run
}
