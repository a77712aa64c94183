package httpapp_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/httpapp"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
)

// A chained job with a queue of its own, started over HTTP push when its
// parent's last item settles, gets its items on its own queue, as on
// Lambda (the job-queue router), never on the shared work queue; pushed
// from there, the chained run completes.
func TestPushChainedJobOnItsOwnQueue(t *testing.T) {
	t.Parallel()
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := eng.open(t)
			ok := baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte(`{}`), nil })
			catalog := baton.MustCatalog(
				baton.Job{Name: "up", Schedule: "rate(1 minute)", Assets: []string{"u1", "u2"}, Processor: ok, Chains: []baton.Chain{{Job: "down"}}},
				baton.Job{Name: "down", Assets: []string{"d1", "d2", "d3"}, Processor: ok, Queue: baton.JobQueue{Name: "own"}},
			)
			own, err := b.JobQueueFunc(ctx, "own")
			require.NoError(t, err)
			s := serve(t, b, catalog, false, httpapp.WorkerParams{})
			nominal := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
			h, body := ceBinary("tick", nominal, `{"job":"up"}`)
			r := s.post(t, "/", h, body)
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)

			up := pushAll(t, s, b.Work, nominal)
			require.Equal(t, map[string]int{"up": 2}, up, "the parent's items, on the work queue")
			run, _ := waitSettled(t, b, "up", nominal)
			require.Equal(t, ledger.RunComplete, run.State)

			require.Empty(t, pushAll(t, s, b.Work, nominal), "nothing of the chained job on the shared work queue")
			down := pushAll(t, s, own, nominal)
			require.Equal(t, map[string]int{"down": 3}, down, "the chained job's items, on its own queue")
			job, at := ledger.TickOf(ledger.RunID{Job: "down", Submission: baton.ChainKey(run.ID)})
			child, err := b.Ledger.GetRun(ctx, job, at)
			require.NoError(t, err)
			require.Equal(t, ledger.RunComplete, child.State, "the chained run completed from its own queue")
		})
	}
}

// pushAll pushes what q holds now, one message a request, and deletes
// each message answered 200; it returns the items pushed by job (each
// message's own item, or a shard's run).
func pushAll(t *testing.T, s *server, q backend.Queue, nominal time.Time) map[string]int {
	t.Helper()
	jobs := map[string]int{}
	for _, d := range receiveAll(t, q) {
		m, err := message.Decode(d.Body)
		require.NoError(t, err)
		k, err := m.ItemKey()
		require.NoError(t, err)
		jobs[k.Run.Job]++
		h, body := ceBinary(d.MessageID, nominal, string(d.Body))
		h.Set("Ce-Type", "dev.baton.work")
		h.Set("Ce-Deliveryattempt", fmt.Sprint(d.ReceiveCount))
		r := s.post(t, httpapp.PathPush, h, body)
		require.Equal(t, http.StatusOK, r.code, "%v", r.body)
		require.NoError(t, q.Delete(context.Background(), d.ReceiptHandle))
	}
	return jobs
}
