package batonclient_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonclient"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// The client works on PostgreSQL as on the other engines: submit, work,
// wait and read the results.
func TestClientOnPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	_, err := postgresbackend.Setup(t.Context(), dsn, 0)
	require.NoError(t, err)
	catalog, err := baton.NewCatalog(baton.Job{
		Name: "thumbs", Assets: []string{"unused"},
		Processor: baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) {
			return append([]byte("done "), t.Payload...), nil
		}),
	})
	require.NoError(t, err)
	client, err := batonclient.Open(t.Context(), catalog, &batonclient.Options{Engine: "postgres", DSN: dsn})
	require.NoError(t, err)
	defer client.Close()
	work, stop := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- client.Work(work) }()
	defer func() { stop(); <-done }()

	sub, err := client.Submit(t.Context(), "thumbs", "upload-1", []baton.Item{{Name: "a", Payload: []byte("x")}, {Name: "b", Payload: []byte("y")}})
	require.NoError(t, err)
	st, err := client.Wait(t.Context(), sub.Run, 20*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, "complete", st.State)
	var got []string
	for r, err := range client.Results(t.Context(), sub.Run) {
		require.NoError(t, err)
		got = append(got, r.Item+"="+string(r.Result))
	}
	require.Equal(t, []string{"a=done x", "b=done y"}, got)

	_, err = batonclient.Open(t.Context(), catalog, &batonclient.Options{Engine: "oracle"})
	require.ErrorContains(t, err, `unknown engine "oracle" (engines: aws, postgres, sqlite;`)

	// The connection string alone names the engine, as every entry
	// point's does.
	byURL, err := batonclient.Open(t.Context(), catalog, &batonclient.Options{Engine: dsn})
	require.NoError(t, err)
	defer byURL.Close()
	st, err = byURL.Status(t.Context(), sub.Run)
	require.NoError(t, err)
	require.Equal(t, "complete", st.State, "the run the other client made, in the same database")
}
