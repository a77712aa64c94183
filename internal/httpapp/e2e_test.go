package httpapp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/httpapp"
	"github.com/batonhq/baton/internal/ledger"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// engines are the backends the end-to-end tests run on; an engine is one
// entry (a constructor of a fresh, empty backend).
var engines = []struct {
	name string
	open func(t *testing.T) backend.Backend
}{
	{"sqlite", func(t *testing.T) backend.Backend {
		b, err := sqlitebackend.Open(context.Background(), filepath.Join(t.TempDir(), "baton.db"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		return b
	}},
}

const testSecret = "e2e-secret-0123456789"

// server is a running Serve on a loopback port.
type server struct {
	url     string
	backend backend.Backend
	cancel  context.CancelFunc
	done    chan error
}

func serve(t *testing.T, b backend.Backend, catalog *baton.Catalog, pull bool, w httpapp.WorkerParams) *server {
	t.Helper()
	return serveWith(t, b, catalog, pull, w, httpapp.Auth{Secret: testSecret})
}

func serveWith(t *testing.T, b backend.Backend, catalog *baton.Catalog, pull bool, w httpapp.WorkerParams, auth httpapp.Auth) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{url: "http://" + ln.Addr().String(), backend: b, cancel: cancel, done: make(chan error, 1)}
	go func() {
		s.done <- httpapp.Serve(ctx, httpapp.ServeParams{
			Params:     httpapp.Params{Catalog: catalog, Backend: b, Logger: slog.New(slog.DiscardHandler), Timeout: 20 * time.Second},
			Listener:   ln,
			AuthConfig: auth,
			Workers:    w,
			Pull:       pull,
		})
	}()
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *server) stop(t *testing.T) {
	s.cancel()
	select {
	case err, ok := <-s.done:
		if ok {
			require.NoError(t, err)
			close(s.done)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

type reply struct {
	code int
	body map[string]any
}

func (s *server) post(t *testing.T, path string, header http.Header, body string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	if req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+testSecret)
	}
	return do(t, req)
}

func (s *server) get(t *testing.T, path string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	require.NoError(t, err)
	return do(t, req)
}

func do(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := reply{code: resp.StatusCode}
	require.NoError(t, json.Unmarshal(raw, &out.body), "body %s", raw)
	return out
}

// ceBinary and ceStructured are the headers and body of a tick.
func ceBinary(id string, at time.Time, data string) (http.Header, string) {
	h := http.Header{}
	h.Set("Ce-Specversion", "1.0")
	h.Set("Ce-Id", id)
	h.Set("Ce-Source", "/apis/v1/namespaces/default/pingsources/fx")
	h.Set("Ce-Type", "dev.knative.sources.ping")
	h.Set("Ce-Time", at.UTC().Format(time.RFC3339))
	h.Set("Content-Type", "application/json")
	return h, data
}

func ceStructured(id, typ string, at time.Time, data string) (http.Header, string) {
	ev, _ := json.Marshal(map[string]any{"specversion": "1.0", "id": id, "source": "//cloudscheduler.googleapis.com/jobs/fx",
		"type": typ, "time": at.UTC().Format(time.RFC3339), "datacontenttype": "application/json", "data": json.RawMessage(data)})
	h := http.Header{}
	h.Set("Content-Type", "application/cloudevents+json")
	return h, string(ev)
}

// waitSettled polls the ledger until the tick's run is finished.
func waitSettled(t *testing.T, b backend.Backend, job string, nominal time.Time) (ledger.Run, []ledger.Item) {
	t.Helper()
	ctx := context.Background()
	var run ledger.Run
	require.Eventually(t, func() bool {
		r, err := b.Ledger.GetRun(ctx, job, nominal)
		run = r
		return err == nil && r.State.Finished()
	}, 30*time.Second, 20*time.Millisecond, "run %s@%s not settled", job, nominal)
	items, err := b.Ledger.ListItems(ctx, run.ID)
	require.NoError(t, err)
	return run, items
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			b := eng.open(t)
			s := serve(t, b, fx.Catalog(nil), true, httpapp.WorkerParams{Consumers: 2, RetryDelay: 50 * time.Millisecond})

			require.Equal(t, http.StatusOK, s.get(t, httpapp.PathHealth).code)
			ready := s.get(t, httpapp.PathReady)
			require.Equal(t, http.StatusOK, ready.code)
			require.Equal(t, eng.name, ready.body["backend"])

			// Two ticks: the previous minute's in binary mode, the one
			// before in structured mode; each opens its run, the pull
			// workers process every item and the run settles.
			minute := time.Now().UTC().Truncate(time.Minute)
			for i, mode := range []string{"binary", "structured"} {
				nominal := minute.Add(-time.Duration(i+1) * time.Minute)
				var h http.Header
				var body string
				if mode == "binary" {
					h, body = ceBinary("tick-"+mode, nominal, `{"job":"fx"}`)
				} else {
					h, body = ceStructured("tick-"+mode, "dev.knative.sources.ping", nominal, `{"job":"fx"}`)
				}
				r := s.post(t, "/", h, body)
				require.Equal(t, http.StatusOK, r.code, "%v", r.body)
				require.Equal(t, "opened", r.body["outcome"])
				require.Equal(t, "cloudevent", r.body["source"])
				require.Equal(t, mode, r.body["event_mode"])
				require.Equal(t, nominal.Format(time.RFC3339), r.body["nominal"])
				require.EqualValues(t, len(fx.Assets), r.body["enqueued"])

				run, items := waitSettled(t, b, "fx", nominal)
				require.Equal(t, ledger.RunComplete, run.State)
				require.Len(t, items, len(fx.Assets)+1, "the assets and DXY")
				for _, it := range items {
					require.Equal(t, ledger.ItemSucceeded, it.State, it.Key.String())
				}

				// The same tick again: one tick, one run.
				r = s.post(t, "/trigger", h, body)
				require.Equal(t, http.StatusOK, r.code, "%v", r.body)
				require.Equal(t, "already_fanned_out", r.body["outcome"])
			}

			// A plain JSON trigger, as a Cloud Scheduler HTTP job sends it.
			nominal := minute.Add(-3 * time.Minute)
			r := s.post(t, "/", http.Header{"Content-Type": {"application/octet-stream"}},
				fmt.Sprintf(`{"job":"fx","scheduledTime":%q}`, nominal.Format(time.RFC3339)))
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)
			require.Equal(t, "scheduler", r.body["source"])
			run, _ := waitSettled(t, b, "fx", nominal)
			require.Equal(t, ledger.RunComplete, run.State)

			// Refusals, each with its reason.
			for name, tc := range map[string]struct {
				header  http.Header
				body    string
				code    int
				wantErr string
			}{
				"unknown field": {http.Header{"Content-Type": {"application/json"}}, `{"job":"fx","when":"now"}`, http.StatusBadRequest, `"when"`},
				"unknown job":   {func() http.Header { h, _ := ceBinary("x", minute, ""); return h }(), `{"job":"eod"}`, http.StatusBadRequest, `job "eod" is not in this deployment's catalog`},
				"bad event":     {http.Header{"Content-Type": {"application/cloudevents+json"}}, `{"specversion":"1.0","type":"t"}`, http.StatusBadRequest, "not a valid CloudEvent (structured mode)"},
				"no secret":     {http.Header{"Authorization": {"Basic eDp5"}}, `{"job":"fx"}`, http.StatusUnauthorized, "no secret in the Authorization header"},
				"wrong secret":  {http.Header{"Authorization": {"Bearer not-the-secret"}}, `{"job":"fx"}`, http.StatusUnauthorized, "wrong secret"},
			} {
				r := s.post(t, "/", tc.header, tc.body)
				require.Equal(t, tc.code, r.code, "%s: %v", name, r.body)
				require.Contains(t, r.body["error"], tc.wantErr, name)
			}
			r = s.get(t, "/")
			require.Equal(t, http.StatusMethodNotAllowed, r.code)
		})
	}
}

func TestPushEndToEnd(t *testing.T) {
	t.Parallel()
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			b := eng.open(t)
			s := serve(t, b, fx.Catalog(nil), false, httpapp.WorkerParams{})
			nominal := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
			h, body := ceBinary("tick", nominal, `{"job":"fx"}`)
			r := s.post(t, "/", h, body)
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)

			// A malformed message is dead-lettered with its reason and
			// acknowledged: a push system must not retry it.
			h, body = ceStructured("bad-1", "dev.baton.work", nominal, `{"v":1,"key":"fx@nonsense"}`)
			r = s.post(t, httpapp.PathPush, h, body)
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)
			require.Equal(t, "malformed", r.body["status"])
			require.NotEmpty(t, r.body["dead_lettered"])
			dead := receiveAll(t, b.DeadLetter)
			require.Len(t, dead, 1)
			require.Contains(t, string(dead[0].Body), "nonsense")

			// The push system delivers what the queue holds, one message a
			// request, as the push subscription would, until the run
			// settles (DXY comes once its inputs are done).
			pushed := map[string]int{}
			require.Eventually(t, func() bool {
				for _, d := range receiveAll(t, b.Work) {
					h, body := ceBinary(d.MessageID, nominal, string(d.Body))
					h.Set("Ce-Type", "dev.baton.work")
					h.Set("Ce-Deliveryattempt", fmt.Sprint(d.ReceiveCount))
					r := s.post(t, httpapp.PathPush, h, body)
					pushed[fmt.Sprint(r.code, " ", r.body["status"])]++
					if r.code == http.StatusOK {
						require.NoError(t, b.Work.Delete(context.Background(), d.ReceiptHandle))
					}
				}
				run, err := b.Ledger.GetRun(context.Background(), "fx", nominal)
				return err == nil && run.State.Finished()
			}, 30*time.Second, 20*time.Millisecond)
			require.Equal(t, len(fx.Assets)+1, pushed["200 succeeded"], "%v", pushed)
			run, items := waitSettled(t, b, "fx", nominal)
			require.Equal(t, ledger.RunComplete, run.State)
			require.Len(t, items, len(fx.Assets)+1)

			// A message pushed again after its item succeeded: a duplicate,
			// acknowledged without processing.
			again := message.New(ledger.ItemKey{Run: run.ID, Asset: "EURUSD"}, run.OpenFence, false).QueueMessage()
			h, body = ceBinary("again", nominal, string(again.Body))
			h.Set("Ce-Type", "dev.baton.work")
			r = s.post(t, httpapp.PathPush, h, body)
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)
			require.Equal(t, "duplicate", r.body["status"])

			// Not a CloudEvent at all: nothing to dead-letter, 400.
			r = s.post(t, httpapp.PathPush, http.Header{"Content-Type": {"application/json"}}, `{"v":1}`)
			require.Equal(t, http.StatusBadRequest, r.code)
			require.Contains(t, r.body["error"], "not a CloudEvent")
		})
	}
}

// receiveAll receives what q holds now.
func receiveAll(t *testing.T, q backend.Queue) []queue.Delivery {
	t.Helper()
	var out []queue.Delivery
	for {
		ds, err := q.Receive(context.Background(), queue.ReceiveParams{Max: queue.MaxBatch, Visibility: time.Minute, Wait: 10 * time.Millisecond, Now: time.Now()})
		require.NoError(t, err)
		if len(ds) == 0 {
			return out
		}
		out = append(out, ds...)
	}
}

func TestGracefulStopReleases(t *testing.T) {
	t.Parallel()
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			b := eng.open(t)
			var block atomic.Bool
			block.Store(true)
			started := make(chan string, 16)
			var mu sync.Mutex
			job := baton.Job{
				Name: "slow", Schedule: "rate(1 minute)", Assets: []string{"a", "b"},
				Limits: baton.Limits{ClockSkew: time.Millisecond, ItemLease: time.Minute, MaxAttempts: 5, Concurrency: 2, DeadlineMargin: time.Millisecond},
				Processor: baton.ProcessorFunc(func(ctx context.Context, task baton.Task) ([]byte, error) {
					mu.Lock()
					blocking := block.Load()
					mu.Unlock()
					if !blocking {
						return []byte(`"done"`), nil
					}
					started <- task.Asset
					<-ctx.Done() // a long item: only the stop ends it
					return nil, ctx.Err()
				}),
			}
			catalog := baton.MustCatalog(job)
			w := httpapp.WorkerParams{Consumers: 2, BatchSize: 1, Grace: 100 * time.Millisecond, RetryDelay: 50 * time.Millisecond}
			s := serve(t, b, catalog, true, w)
			nominal := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
			h, body := ceBinary("tick", nominal, `{"job":"slow"}`)
			r := s.post(t, "/", h, body)
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)
			<-started
			<-started // both items are being processed

			s.stop(t) // SIGTERM: the grace period passes, both are given back
			run, err := b.Ledger.GetRun(context.Background(), "slow", nominal)
			require.NoError(t, err)
			items, err := b.Ledger.ListItems(context.Background(), run.ID)
			require.NoError(t, err)
			require.Len(t, items, 2)
			for _, it := range items {
				require.Equal(t, ledger.ItemRunning, it.State, "released, no verdict")
				require.Equal(t, 1, it.Attempt)
				require.False(t, it.LeaseUntil.After(time.Now()), "claim released")
			}

			// A new instance takes the messages again and finishes them.
			mu.Lock()
			block.Store(false)
			mu.Unlock()
			serve(t, b, catalog, true, w)
			run, items = waitSettled(t, b, "slow", nominal)
			require.Equal(t, ledger.RunComplete, run.State)
			for _, it := range items {
				require.Equal(t, ledger.ItemSucceeded, it.State)
				require.Equal(t, 2, it.Attempt)
			}
		})
	}
}

// slowJob is a job whose processor, while block is set, runs until its
// context ends (announcing each item on started).
func slowJob(block *atomic.Bool, started chan<- string) *baton.Catalog {
	return baton.MustCatalog(baton.Job{
		Name: "slow", Schedule: "rate(1 minute)", Assets: []string{"a", "b"},
		Limits: baton.Limits{ClockSkew: time.Millisecond, ItemLease: time.Minute, MaxAttempts: 5, Concurrency: 2, DeadlineMargin: time.Millisecond},
		Processor: baton.ProcessorFunc(func(ctx context.Context, task baton.Task) ([]byte, error) {
			if !block.Load() {
				return []byte(`"done"`), nil
			}
			started <- task.Asset
			<-ctx.Done()
			return nil, ctx.Err()
		}),
	})
}

// A pushed message still being processed when the grace period ends is
// given back and answered 503, so that the push system delivers it again.
func TestGracefulStopAnswersPushed503(t *testing.T) {
	t.Parallel()
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			b := eng.open(t)
			var block atomic.Bool
			block.Store(true)
			started := make(chan string, 4)
			catalog := slowJob(&block, started)
			s := serve(t, b, catalog, false, httpapp.WorkerParams{Grace: 100 * time.Millisecond})
			nominal := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
			h, body := ceBinary("tick", nominal, `{"job":"slow"}`)
			require.Equal(t, http.StatusOK, s.post(t, "/", h, body).code)
			msgs := receiveAll(t, b.Work)
			require.Len(t, msgs, 2)

			answer := make(chan reply, 1)
			go func() {
				h, body := ceBinary(msgs[0].MessageID, nominal, string(msgs[0].Body))
				answer <- s.post(t, httpapp.PathPush, h, body)
			}()
			<-started
			s.stop(t)
			r := <-answer
			require.Equal(t, http.StatusServiceUnavailable, r.code, "%v", r.body)
			require.Equal(t, "released", r.body["status"])
			require.Contains(t, r.body["error"], "consumer stopping")
			require.Empty(t, receiveAll(t, b.DeadLetter), "nothing dead-lettered")
		})
	}
}

// Over HTTP with OIDC: a token from the local issuer for the service's
// audience runs the tick; others are refused with the reason.
func TestEndToEndOIDC(t *testing.T) {
	t.Parallel()
	iss := newIssuer(t)
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			b := eng.open(t)
			const aud = "https://baton.example"
			s := serveWith(t, b, fx.Catalog(nil), true, httpapp.WorkerParams{Consumers: 2, RetryDelay: 50 * time.Millisecond},
				httpapp.Auth{OIDCIssuer: iss.url, OIDCAudience: aud, OIDCEmails: []string{"scheduler@p.iam.gserviceaccount.com"}})
			now := time.Now()
			tok := func(audience, email string) string {
				return iss.token(t, claims{Claims: jwt.Claims{Issuer: iss.url, Audience: jwt.Audience{audience}, Subject: "1",
					IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), Expiry: jwt.NewNumericDate(now.Add(time.Hour))},
					Email: email, EmailVerified: true}, nil)
			}
			nominal := now.UTC().Truncate(time.Minute).Add(-time.Minute)
			for _, tc := range []struct {
				token   string
				code    int
				wantErr string
			}{
				{tok("https://other.example", "scheduler@p.iam.gserviceaccount.com"), http.StatusUnauthorized, "audience"},
				{tok(aud, "intruder@q.iam.gserviceaccount.com"), http.StatusUnauthorized, "not one of the accepted callers"},
				{tok(aud, "scheduler@p.iam.gserviceaccount.com"), http.StatusOK, ""},
			} {
				h, body := ceStructured("tick", "google.cloud.scheduler.job.v1.executed", nominal, `{"job":"fx"}`)
				h.Set("Authorization", "Bearer "+tc.token)
				r := s.post(t, "/", h, body)
				require.Equal(t, tc.code, r.code, "%v", r.body)
				if tc.wantErr != "" {
					require.Contains(t, r.body["error"], tc.wantErr)
				}
			}
			run, _ := waitSettled(t, b, "fx", nominal)
			require.Equal(t, ledger.RunComplete, run.State)
		})
	}
}

// A pushed message whose processor outlives its item lease keeps its
// claim by heartbeats, written to the ledger: it succeeds on its first
// attempt.
func TestPushHeartbeats(t *testing.T) {
	t.Parallel()
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			b := eng.open(t)
			const lease = time.Second
			var beats atomic.Int64
			catalog := baton.MustCatalog(baton.Job{
				Name: "long", Schedule: "rate(1 minute)", Assets: []string{"a"},
				Limits: baton.Limits{ClockSkew: time.Millisecond, ItemLease: lease, MaxAttempts: 1, DeadlineMargin: time.Millisecond},
				Processor: baton.ProcessorFunc(func(ctx context.Context, task baton.Task) ([]byte, error) {
					until := task.Claim.Until()
					for range 3 { // three leases' worth of work
						for time.Until(until) > lease/2 {
							select {
							case <-ctx.Done():
								return nil, context.Cause(ctx)
							case <-time.After(lease / 10):
							}
						}
						if err := task.Heartbeat(ctx); err != nil {
							return nil, err
						}
						beats.Add(1)
						until = task.Claim.Until()
					}
					return []byte(`"done"`), nil
				}),
			})
			s := serve(t, b, catalog, false, httpapp.WorkerParams{})
			nominal := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
			h, body := ceBinary("tick", nominal, `{"job":"long"}`)
			require.Equal(t, http.StatusOK, s.post(t, "/", h, body).code)
			msgs := receiveAll(t, b.Work)
			require.Len(t, msgs, 1)
			h, body = ceBinary(msgs[0].MessageID, nominal, string(msgs[0].Body))
			r := s.post(t, httpapp.PathPush, h, body)
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)
			require.Equal(t, "succeeded", r.body["status"])
			require.EqualValues(t, 1, r.body["attempt"])
			require.EqualValues(t, 3, beats.Load())
			run, items := waitSettled(t, b, "long", nominal)
			require.Equal(t, ledger.RunComplete, run.State)
			require.Len(t, items, 1)
			require.Equal(t, 1, items[0].Attempt)
		})
	}
}

// pubsubPush is a standard Pub/Sub push subscription's request for one
// message: no CloudEvent, the envelope as the JSON body.
func pubsubPush(id string, data []byte, attrs map[string]string) (http.Header, string) {
	env, _ := json.Marshal(map[string]any{
		"message": map[string]any{"data": data, "attributes": attrs, "messageId": id, "message_id": id,
			"publishTime": time.Now().UTC().Format(time.RFC3339Nano)},
		"subscription": "projects/p/subscriptions/baton-push",
	})
	return http.Header{"Content-Type": {"application/json"}}, string(env)
}

// TestPubSubPushEndToEnd: the push endpoint serves a standard Pub/Sub push
// subscription beside CloudEvents: the work is done through the same
// consumer (vouched, claimed, settled), an unvouched or malformed message
// is dead-lettered with its reason and acknowledged, and so is an unusable
// envelope, whole: Pub/Sub would redeliver any answer but a success.
func TestPubSubPushEndToEnd(t *testing.T) {
	t.Parallel()
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			t.Parallel()
			b := eng.open(t)
			s := serve(t, b, fx.Catalog(nil), false, httpapp.WorkerParams{})
			nominal := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
			h, body := ceBinary("tick", nominal, `{"job":"fx"}`)
			r := s.post(t, "/", h, body)
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)

			pushed := map[string]int{}
			require.Eventually(t, func() bool {
				for _, d := range receiveAll(t, b.Work) {
					h, body := pubsubPush("ps-"+d.MessageID, d.Body, d.Attributes)
					r := s.post(t, httpapp.PathPush, h, body)
					require.Equal(t, "ps-"+d.MessageID, r.body["message_id"], "the messageId is the delivery's id")
					pushed[fmt.Sprint(r.code, " ", r.body["status"])]++
					if r.code == http.StatusOK {
						require.NoError(t, b.Work.Delete(context.Background(), d.ReceiptHandle))
					}
				}
				run, err := b.Ledger.GetRun(context.Background(), "fx", nominal)
				return err == nil && run.State.Finished()
			}, 30*time.Second, 20*time.Millisecond)
			require.Equal(t, len(fx.Assets)+1, pushed["200 succeeded"], "%v", pushed)
			run, _ := waitSettled(t, b, "fx", nominal)
			require.Equal(t, ledger.RunComplete, run.State)

			// Pushed again: a duplicate, acknowledged without processing.
			again := message.New(ledger.ItemKey{Run: run.ID, Asset: "EURUSD"}, run.OpenFence, false).QueueMessage()
			h, body = pubsubPush("ps-again", again.Body, again.Attributes)
			r = s.post(t, httpapp.PathPush, h, body)
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)
			require.Equal(t, "duplicate", r.body["status"])

			// Vouching: a message of a run the ledger does not hold is not
			// worked on; it is dead-lettered with its reason.
			ghost := message.New(ledger.ItemKey{Run: ledger.RunID{Job: "fx", Nominal: nominal.Add(-time.Hour), Generation: 1}, Asset: "EURUSD"}, 1, false).QueueMessage()
			h, body = pubsubPush("ps-ghost", ghost.Body, ghost.Attributes)
			r = s.post(t, httpapp.PathPush, h, body)
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)
			require.NotEmpty(t, r.body["dead_lettered"], "%v", r.body)
			_, err := b.Ledger.GetRun(context.Background(), "fx", nominal.Add(-time.Hour))
			require.ErrorIs(t, err, ledger.ErrNotFound, "an unvouched message writes nothing")

			// A malformed body and an unusable envelope: dead-lettered
			// with their reasons, acknowledged.
			h, body = pubsubPush("ps-bad", []byte(`{"v":1,"key":"fx@nonsense"}`), nil)
			r = s.post(t, httpapp.PathPush, h, body)
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)
			require.Equal(t, "malformed", r.body["status"])
			unusable := `{"message":{"data":"%%%","messageId":"ps-unusable"},"subscription":"projects/p/subscriptions/baton-push"}`
			r = s.post(t, httpapp.PathPush, http.Header{"Content-Type": {"application/json"}}, unusable)
			require.Equal(t, http.StatusOK, r.code, "%v", r.body)
			require.Equal(t, "ps-unusable", r.body["message_id"])
			require.Equal(t, "malformed", r.body["status"])
			require.Contains(t, r.body["dead_lettered"], "Pub/Sub envelope: illegal base64 data")
			dead := receiveAll(t, b.DeadLetter)
			reasons := map[string]string{}
			for _, d := range dead {
				reasons[string(d.Body)] = d.Attributes[message.AttrError]
			}
			require.Len(t, reasons, 3, "%v", reasons)
			require.Contains(t, reasons[string(ghost.Body)], "fx@")
			require.Contains(t, reasons[`{"v":1,"key":"fx@nonsense"}`], "malformed")
			require.Contains(t, reasons[unusable], "Pub/Sub push request (message \"ps-unusable\"): Pub/Sub envelope: illegal base64 data", "the envelope whole, with its reason")

			// Neither a CloudEvent nor a Pub/Sub push: nothing to
			// dead-letter, 400.
			r = s.post(t, httpapp.PathPush, http.Header{"Content-Type": {"application/json"}}, `{"v":1}`)
			require.Equal(t, http.StatusBadRequest, r.code)
			require.Contains(t, r.body["error"], "nor a Pub/Sub push request")
		})
	}
}
