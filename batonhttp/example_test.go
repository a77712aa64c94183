package batonhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonhttp"
)

func helloCatalog(processed *atomic.Int64, done func()) *baton.Catalog {
	return baton.MustCatalog(baton.Job{
		Name: "hello", Schedule: "rate(1 minute)", Assets: []string{"en", "fr"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			if processed != nil && processed.Add(1) == 2 && done != nil {
				done()
			}
			return []byte(`"hello"`), nil
		}),
	})
}

// A Knative PingSource tick (a CloudEvent in binary mode) opens the run
// of its tick; the pull consumers then process its items.
func ExampleNewCoordinatorHandler() {
	dir, _ := os.MkdirTemp("", "batonhttp-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	b, err := batonhttp.OpenBackend(ctx, "sqlite", &batonhttp.BackendOptions{Store: filepath.Join(dir, "baton.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	var processed atomic.Int64
	consumeCtx, stop := context.WithCancel(ctx)
	catalog := helloCatalog(&processed, stop)

	h, err := batonhttp.NewCoordinatorHandler(catalog, &batonhttp.Options{
		Backend: b, Auth: batonhttp.Auth{Secret: "a-secret-of-16-bytes-or-more"},
	})
	if err != nil {
		log.Fatal(err)
	}
	tick := time.Now().UTC().Truncate(time.Minute)
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"job":"hello"}`))
	req.Header.Set("Authorization", "Bearer a-secret-of-16-bytes-or-more")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Id", "tick-1")
	req.Header.Set("Ce-Source", "/apis/v1/namespaces/default/pingsources/hello")
	req.Header.Set("Ce-Type", "dev.knative.sources.ping")
	req.Header.Set("Ce-Time", tick.Format(time.RFC3339))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var resp struct {
		Outcome  string `json:"outcome"`
		Source   string `json:"source"`
		Enqueued int    `json:"enqueued"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &resp)
	fmt.Println(rec.Code, resp.Outcome, resp.Source, resp.Enqueued)

	// The consumers run until both items are processed.
	if err := batonhttp.RunConsumer(consumeCtx, catalog, b, &batonhttp.ConsumerOptions{Consumers: 2}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("processed", processed.Load())
	// Output:
	// 200 opened cloudevent 2
	// processed 2
}

// A bad trigger is refused with the reason.
func ExampleNewCoordinatorHandler_refused() {
	dir, _ := os.MkdirTemp("", "batonhttp-example")
	defer os.RemoveAll(dir)
	b, err := batonhttp.OpenBackend(context.Background(), "sqlite", &batonhttp.BackendOptions{Store: filepath.Join(dir, "baton.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	h, err := batonhttp.NewCoordinatorHandler(helloCatalog(nil, nil), &batonhttp.Options{
		Backend: b, Auth: batonhttp.Auth{Secret: "a-secret-of-16-bytes-or-more"},
	})
	if err != nil {
		log.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"job":"hello","sheduledTime":"2026-11-21T12:00:00Z"}`))
	req.Header.Set("Authorization", "Bearer a-secret-of-16-bytes-or-more")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	// Output:
	// 400 {"error":"bad request: bad coordinator trigger: scheduler or replay payload: unknown field \"sheduledTime\""}
}

// A container's main: the coordinator endpoint and the pull consumers on
// $PORT, callers verified by their Google-signed OIDC token (Cloud
// Scheduler's), stopped gracefully on SIGTERM.
func ExampleServe() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	b, err := batonhttp.OpenBackend(ctx, "sqlite", &batonhttp.BackendOptions{Store: "/data/baton.db"})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	err = batonhttp.Serve(ctx, helloCatalog(nil, nil), &batonhttp.ServeOptions{Options: batonhttp.Options{
		Backend: b,
		Auth: batonhttp.Auth{
			OIDCIssuer:   "https://accounts.google.com",
			OIDCAudience: "https://hello-abc123-ew.a.run.app",
			OIDCEmails:   []string{"scheduler@my-project.iam.gserviceaccount.com"},
		},
	}})
	if err != nil {
		log.Fatal(err)
	}
}

// The PostgreSQL engine: any number of instances share one database (and
// its work queue). Setup applies the schema's migrations at start, as
// 'baton setup --backend postgres' would.
func ExampleOpenBackend_postgres() {
	ctx := context.Background()
	b, err := batonhttp.OpenBackend(ctx, "postgres", &batonhttp.BackendOptions{
		DSN:   os.Getenv("BATON_PG_DSN"), // postgres://baton:…@db:5432/baton
		Setup: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	fmt.Println(b.Name())
}
