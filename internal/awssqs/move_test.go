package awssqs_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/queue"
)

// laggingList makes ListMessageMoveTasks answer, for its first lagPolls
// calls after each StartMessageMoveTask, as if the new task were not
// listed yet (as SQS may, right after the start): tasks started since are
// left out, the rest cut to the MaxResults asked for.
type laggingList struct {
	inner interface {
		Do(*http.Request) (*http.Response, error)
	}
	lagPolls int

	mu      sync.Mutex
	since   int64 // start of the latest task, in epoch milliseconds
	lagging int   // lagged answers still to give
}

func (l *laggingList) Do(req *http.Request) (*http.Response, error) {
	switch req.Header.Get("X-Amz-Target") {
	case "AmazonSQS.StartMessageMoveTask":
		l.mu.Lock()
		l.since, l.lagging = time.Now().UnixMilli(), l.lagPolls
		l.mu.Unlock()
	case "AmazonSQS.ListMessageMoveTasks":
		l.mu.Lock()
		lag, since := l.lagging > 0, l.since
		if lag {
			l.lagging--
		}
		l.mu.Unlock()
		if lag {
			return l.lagged(req, since)
		}
	}
	return l.inner.Do(req)
}

// lagged asks for 10 tasks, drops those started at or after since and
// answers with at most the number asked for (SQS's default: 1).
func (l *laggingList) lagged(req *http.Request, since int64) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	asked := 1
	if n, ok := in["MaxResults"].(float64); ok {
		asked = int(n)
	}
	in["MaxResults"] = 10
	body, _ = json.Marshal(in)
	req = req.Clone(req.Context())
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	req.Header.Del("Content-Length")
	resp, err := l.inner.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var out struct{ Results []map[string]any }
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("list answer %s: %w", raw, err)
	}
	var kept []map[string]any
	for _, r := range out.Results {
		if ts, _ := r["StartedTimestamp"].(float64); int64(ts) < since && len(kept) < asked {
			kept = append(kept, r)
		}
	}
	raw, _ = json.Marshal(map[string]any{"Results": kept})
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// MoveAll waits for the task it started, not for the earlier one the list
// still shows first right after the start.
func TestMoveAllWaitsForItsOwnTask(t *testing.T) {
	t.Parallel()
	lag := &laggingList{inner: awshttp.NewBuildableClient()}
	c := localaws.SQSClient(t, func(o *sqs.Options) { o.HTTPClient = lag })
	name := uniqueName("mv")
	url, dlqURL, err := awssqs.EnsureQueues(t.Context(), c, name, 3, time.Minute)
	require.NoError(t, err)
	deleteOnCleanup(t, c, url)
	deleteOnCleanup(t, c, dlqURL)
	work, dlq := awssqs.New(c, url, nil), awssqs.New(c, dlqURL, nil)

	// The first move without a lag, then one where the list shows the
	// first, COMPLETED, task for two polls after the start.
	for i, n := range []int{2, 5} {
		lag.mu.Lock()
		lag.lagPolls = 2 * i
		lag.mu.Unlock()
		msgs := make([]queue.Message, n)
		for j := range msgs {
			msgs[j] = queue.Message{ID: fmt.Sprintf("m%d-%d", i, j), Body: []byte(fmt.Sprintf("dead %d/%d", i, j))}
		}
		require.NoError(t, dlq.SendBatch(t.Context(), msgs))
		moved, err := dlq.MoveAll(t.Context(), work, 0, 50*time.Millisecond)
		require.NoError(t, err, "move %d", i)
		require.EqualValues(t, n, moved, "move %d reports its own task's count", i)
		got := receiveAll(t, work, time.Minute)
		require.Len(t, got, n, "move %d", i)
		for _, d := range got {
			require.NoError(t, work.Delete(t.Context(), d.ReceiptHandle))
		}
	}
}
