package awssqs_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/queue"
)

var seq atomic.Int64

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, seq.Add(1))
}

type bundle struct {
	client *sqs.Client
	q      *awssqs.Queue
}

// setup makes a fresh queue on the emulator.
func setup(t *testing.T) bundle {
	t.Helper()
	c := localaws.SQSClient(t)
	out, err := c.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(uniqueName("q"))})
	require.NoError(t, err)
	return bundle{client: c, q: awssqs.New(c, *out.QueueUrl, nil)}
}

func receiveAll(t *testing.T, q *awssqs.Queue, visibility time.Duration) []queue.Delivery {
	t.Helper()
	var all []queue.Delivery
	for {
		ds, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 10, Visibility: visibility, Now: time.Now()})
		require.NoError(t, err)
		if len(ds) == 0 {
			return all
		}
		all = append(all, ds...)
	}
}

func TestSendReceiveRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := time.Now().Add(-time.Second)
	err := b.q.SendBatch(t.Context(), []queue.Message{
		{ID: "a", Body: []byte(`{"asset":"EURUSD"}`), Attributes: map[string]string{"run": "fx/2025-01-02T03:04:00Z/1", "kind": "item"}},
		{ID: "b", Body: []byte("plain é😀")},
	})
	require.NoError(t, err)

	ds := receiveAll(t, b.q, time.Minute)
	require.Len(t, ds, 2)
	byBody := map[string]queue.Delivery{}
	for _, d := range ds {
		byBody[string(d.Body)] = d
		require.NotEmpty(t, d.MessageID)
		require.NotEmpty(t, d.ReceiptHandle)
		require.Equal(t, 1, d.ReceiveCount)
		require.False(t, d.SentAt.Before(before.Truncate(time.Millisecond)), d.SentAt)
		require.False(t, d.SentAt.After(time.Now()), d.SentAt)
		require.Equal(t, time.UTC, d.SentAt.Location())
	}
	require.Equal(t, map[string]string{"run": "fx/2025-01-02T03:04:00Z/1", "kind": "item"}, byBody[`{"asset":"EURUSD"}`].Attributes)
	require.Empty(t, byBody["plain é😀"].Attributes)
}

func TestSendBatchLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	eleven := make([]queue.Message, 11)
	for i := range eleven {
		eleven[i] = queue.Message{ID: strconv.Itoa(i), Body: []byte("m")}
	}
	big := []byte(strings.Repeat("x", queue.MaxBatchBytes/2))
	for name, msgs := range map[string][]queue.Message{
		"empty":     {},
		"eleven":    eleven,
		"too big":   {{ID: "a", Body: big}, {ID: "b", Body: append(big, 'y')}},
		"duplicate": {{ID: "a", Body: []byte("1")}, {ID: "a", Body: []byte("2")}},
	} {
		err := b.q.SendBatch(t.Context(), msgs)
		require.ErrorIs(t, err, queue.ErrBatchTooLarge, name)
	}
	require.Empty(t, receiveAll(t, b.q, time.Minute), "nothing was sent")

	// Exactly at the limits is fine.
	require.NoError(t, b.q.SendBatch(t.Context(), eleven[:10]))
	require.NoError(t, b.q.SendBatch(t.Context(), []queue.Message{{ID: "a", Body: big}, {ID: "b", Body: big}}))
	require.Len(t, receiveAll(t, b.q, time.Minute), 12)
}

// The conformance suite (SendBatchPartial) checks that refused entries
// fail alone; here, which error each gets: ErrInvalidMessage for what SQS
// cannot carry (never sent), the server's for what it refuses.
func TestSendBatchReportsFailedEntries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	err := b.q.SendBatch(t.Context(), []queue.Message{
		{ID: "ok1", Body: []byte("fine")},
		{ID: "nul", Body: []byte("a\x00b")},                                              // not SQS text: never sent
		{ID: "empty-attr", Body: []byte("x"), Attributes: map[string]string{"k": ""}},    // SQS cannot carry it
		{ID: "reserved", Body: []byte("x"), Attributes: map[string]string{"AWS.k": "v"}}, // refused by the server
	})
	var be *queue.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, 3)
	for _, f := range be.Failed {
		if f.ID == "reserved" {
			require.NotErrorIs(t, f.Err, awssqs.ErrInvalidMessage)
		} else {
			require.ErrorIs(t, f.Err, awssqs.ErrInvalidMessage, f.ID)
		}
	}

	// All entries invalid: no call, still a BatchError.
	err = b.q.SendBatch(t.Context(), []queue.Message{{ID: "a", Body: nil}})
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, 1)
	require.ErrorIs(t, be.Failed[0].Err, awssqs.ErrInvalidMessage)
}

func TestSendAllThroughAdapter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msgs := make([]queue.Message, 37)
	for i := range msgs {
		msgs[i] = queue.Message{Body: []byte("item-" + strconv.Itoa(i)), Attributes: map[string]string{"i": strconv.Itoa(i)}}
	}
	sent, err := queue.SendAll(t.Context(), b.q, msgs, nil)
	require.NoError(t, err)
	require.Equal(t, 37, sent)
	got := receiveAll(t, b.q, time.Minute)
	require.Len(t, got, 37)
	seen := map[string]bool{}
	for _, d := range got {
		require.Equal(t, "item-"+d.Attributes["i"], string(d.Body))
		seen[d.Attributes["i"]] = true
	}
	require.Len(t, seen, 37)
}

func TestReceiveHidesAndCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.q.SendBatch(t.Context(), []queue.Message{{ID: "a", Body: []byte("m")}}))

	// Visibility rounds up: 10 ms hides for 1 s.
	first, err := b.q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: 10 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, first, 1)
	require.Equal(t, 1, first[0].ReceiveCount)
	again, err := b.q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Minute})
	require.NoError(t, err)
	require.Empty(t, again, "hidden for a whole second, not 10 ms")

	var second []queue.Delivery
	require.Eventually(t, func() bool {
		second, err = b.q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Minute})
		require.NoError(t, err)
		return len(second) == 1
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, first[0].MessageID, second[0].MessageID)
	require.Equal(t, 2, second[0].ReceiveCount)
	require.NotEqual(t, first[0].ReceiptHandle, second[0].ReceiptHandle)
	require.Equal(t, first[0].SentAt, second[0].SentAt)
}

func TestReceiveClampsMax(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msgs := make([]queue.Message, 10)
	for i := range msgs {
		msgs[i] = queue.Message{ID: strconv.Itoa(i), Body: []byte("m")}
	}
	require.NoError(t, b.q.SendBatch(t.Context(), msgs))
	require.NoError(t, b.q.SendBatch(t.Context(), msgs[:2]))
	got, err := b.q.Receive(t.Context(), queue.ReceiveParams{Max: 0, Visibility: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 1)
	got, err = b.q.Receive(t.Context(), queue.ReceiveParams{Max: 50, Visibility: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 10)
	_, err = b.q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: 13 * time.Hour})
	require.Error(t, err)
}

func TestDeleteAndChangeVisibility(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.q.SendBatch(t.Context(), []queue.Message{{ID: "a", Body: []byte("a")}, {ID: "b", Body: []byte("b")}}))
	got := receiveAll(t, b.q, time.Minute)
	require.Len(t, got, 2)

	require.NoError(t, b.q.Delete(t.Context(), got[0].ReceiptHandle))
	require.NoError(t, b.q.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: got[1].ReceiptHandle, Timeout: 0, Now: time.Now()}))
	again := receiveAll(t, b.q, time.Minute)
	require.Len(t, again, 1, "the deleted message is gone, the other visible again")
	require.Equal(t, got[1].MessageID, again[0].MessageID)

	// Hide it for longer than the receive's visibility; still hidden.
	require.NoError(t, b.q.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: again[0].ReceiptHandle, Timeout: time.Hour}))
	require.Empty(t, receiveAll(t, b.q, time.Minute))

	require.NoError(t, b.q.Delete(t.Context(), again[0].ReceiptHandle))
	d, err := b.q.Depth(t.Context())
	require.NoError(t, err)
	require.Zero(t, d.Total())

	// A deleted message's handle: ChangeVisibility knows; a garbage handle
	// is rejected by both.
	err = b.q.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: again[0].ReceiptHandle, Timeout: time.Second})
	require.ErrorIs(t, err, queue.ErrInvalidReceipt)
	require.ErrorIs(t, b.q.Delete(t.Context(), "not-a-handle"), queue.ErrInvalidReceipt)
	err = b.q.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: "not-a-handle"})
	require.ErrorIs(t, err, queue.ErrInvalidReceipt)
	err = b.q.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: again[0].ReceiptHandle, Timeout: 13 * time.Hour})
	require.Error(t, err)
	require.NotErrorIs(t, err, queue.ErrInvalidReceipt)
}

// The conformance suite (NonexistentQueue) checks send and receive; here,
// that the SDK error stays in the chain, and the calls beyond the port's.
func TestMissingQueue(t *testing.T) {
	t.Parallel()
	q := missingQueue(t)
	_, err := q.Receive(t.Context(), queue.ReceiveParams{Max: 1})
	require.ErrorIs(t, err, queue.ErrNotFound)
	var typed *types.QueueDoesNotExist
	require.ErrorAs(t, err, &typed, "the SDK error stays in the chain")
	require.ErrorIs(t, q.Delete(t.Context(), "h"), queue.ErrNotFound)
	require.ErrorIs(t, q.ChangeVisibility(t.Context(), queue.ChangeVisibilityParams{ReceiptHandle: "h"}), queue.ErrNotFound)
	_, err = q.Depth(t.Context())
	require.ErrorIs(t, err, queue.ErrNotFound)
}

func TestDepth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d, err := b.q.Depth(t.Context())
	require.NoError(t, err)
	require.Equal(t, queue.Depth{Approximate: true}, d)

	msgs := make([]queue.Message, 3)
	for i := range msgs {
		msgs[i] = queue.Message{ID: strconv.Itoa(i), Body: []byte("m")}
	}
	require.NoError(t, b.q.SendBatch(t.Context(), msgs))
	d, err = b.q.Depth(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, d.Total())
	// The emulator counts a new message as delayed for one event-loop turn.
	require.Eventually(t, func() bool {
		d, err = b.q.Depth(t.Context())
		require.NoError(t, err)
		return d == queue.Depth{Visible: 3, Approximate: true}
	}, 5*time.Second, 10*time.Millisecond)

	got, err := b.q.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Minute})
	require.NoError(t, err)
	require.Len(t, got, 1)
	d, err = b.q.Depth(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, d.InFlight)
	// SQS says 2 visible; the emulator counts in-flight messages too.
	require.Contains(t, []int{2, 3}, d.Visible)
}

func TestOptionsMessageAttributeNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	only := awssqs.New(b.client, b.q.URL(), &awssqs.Options{MessageAttributeNames: []string{"keep"}})
	require.NoError(t, b.q.SendBatch(t.Context(), []queue.Message{{ID: "a", Body: []byte("x"), Attributes: map[string]string{"keep": "1", "drop": "2"}}}))
	ds, err := only.Receive(t.Context(), queue.ReceiveParams{Max: 1, Visibility: time.Minute})
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, map[string]string{"keep": "1"}, ds[0].Attributes)
}
