package backend_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	_ "github.com/batonhq/baton/internal/backend/postgresbackend"
	_ "github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	localaws.Stop()
	os.Exit(code)
}

// An unknown name or scheme is an error that lists what is registered,
// and never echoes a URL's password.
func TestOpenUnknownEngine(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"aws", "postgres", "sqlite"}, backend.Engines())
	_, err := backend.Open(t.Context(), "oracle", backend.Config{})
	require.ErrorIs(t, err, backend.ErrUnknownEngine)
	require.EqualError(t, err, `unknown engine "oracle" (engines: aws, postgres, sqlite; or a URL of scheme aws, postgres, postgresql, sqlite)`)

	_, err = backend.Open(t.Context(), "mysql://root:s3cret@db/app", backend.Config{})
	require.ErrorIs(t, err, backend.ErrUnknownEngine)
	require.EqualError(t, err, `unknown engine: no engine for URL scheme "mysql" (registered schemes: aws, postgres, postgresql, sqlite; engines: aws, postgres, sqlite)`)

	_, err = backend.Open(t.Context(), "", backend.Config{})
	require.ErrorIs(t, err, backend.ErrUnknownEngine)
	_, err = backend.Open(t.Context(), "host=db user=app password=s3cret", backend.Config{})
	require.ErrorIs(t, err, backend.ErrUnknownEngine)
	require.NotContains(t, err.Error(), "s3cret", "a key=value connection string is not echoed")

	_, _, err = backend.OpenLocks(t.Context(), "oracle", backend.Config{})
	require.ErrorIs(t, err, backend.ErrUnknownEngine)

	for engine, want := range map[string]string{
		"sqlite:":                     "sqlite engine URL: no file",
		"aws://host/x?table=t":        "aws engine URL: want aws://?table=…&queue=…",
		"aws://?table=t&colour=blue":  `aws engine URL: unknown parameter "colour"`,
		"aws://?max_receives=-1":      `aws engine URL: max_receives="-1": not a count`,
		"postgres://u:s3cret@h:bad/d": "postgres",
	} {
		_, err := backend.Open(t.Context(), engine, backend.Config{})
		require.ErrorContains(t, err, want, engine)
		require.NotContains(t, err.Error(), "s3cret", engine)
	}

	require.Panics(t, func() {
		backend.Register(backend.Driver{Name: "sqlite", Open: func(context.Context, backend.Config) (backend.Backend, error) { return backend.Backend{}, nil }})
	}, "a name registered twice")
}

// The embedded engine opens by name, by URL and by path.
func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		engine string
		cfg    backend.Config
		file   string
	}{
		{"sqlite", backend.Config{Store: filepath.Join(dir, "name.db")}, "name.db"},
		{"sqlite://" + filepath.ToSlash(filepath.Join(dir, "url.db")), backend.Config{}, "url.db"},
		{"SQLite:" + filepath.ToSlash(filepath.Join(dir, "opaque.db")), backend.Config{}, "opaque.db"},
		{filepath.Join(dir, "path.db"), backend.Config{}, "path.db"},
	} {
		b, err := backend.Open(t.Context(), c.engine, c.cfg)
		require.NoError(t, err, c.engine)
		require.Equal(t, "sqlite", b.Name)
		require.NoError(t, b.Close())
		require.FileExists(t, filepath.Join(dir, c.file), c.engine)
	}

	// Read-only: an existing store opens, a missing one is ErrNoStore.
	b, err := backend.Open(t.Context(), "sqlite:"+filepath.ToSlash(filepath.Join(dir, "url.db"))+"?mode=ro", backend.Config{})
	require.NoError(t, err)
	require.NoError(t, b.Close())
	_, err = backend.Open(t.Context(), "sqlite", backend.Config{Store: filepath.Join(dir, "missing.db"), ReadOnly: true})
	require.ErrorIs(t, err, backend.ErrNoStore)

	locks, closeLocks, err := backend.OpenLocks(t.Context(), "sqlite", backend.Config{Store: filepath.Join(dir, "name.db")})
	require.NoError(t, err)
	require.NotNil(t, locks)
	require.NoError(t, closeLocks())
}

// PostgreSQL opens by name with a connection string, and by the
// connection string itself, under both its schemes.
func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	_, err := backend.Open(t.Context(), dsn, backend.Config{})
	require.ErrorContains(t, err, "not set up", "Open alone creates nothing")
	b, err := backend.Open(t.Context(), dsn, backend.Config{Setup: true})
	require.NoError(t, err)
	require.Equal(t, "postgres", b.Name)
	require.NoError(t, b.Close())

	u, err := url.Parse(dsn)
	require.NoError(t, err)
	for _, scheme := range []string{"postgres", "postgresql"} {
		u.Scheme = scheme
		b, err := backend.Open(t.Context(), u.String(), backend.Config{})
		require.NoError(t, err, scheme)
		require.Equal(t, "postgres", b.Name)
		require.NoError(t, b.Close())
	}
	b, err = backend.Open(t.Context(), "postgres", backend.Config{DSN: dsn})
	require.NoError(t, err)
	require.NoError(t, b.Close())

	locks, closeLocks, err := backend.OpenLocks(t.Context(), dsn, backend.Config{})
	require.NoError(t, err)
	require.NotNil(t, locks)
	require.NoError(t, closeLocks())
}

// AWS opens by its URL, the region and credentials from the SDK's
// standard configuration.
func TestOpenAWS(t *testing.T) {
	ddb, q := localaws.DynamoDB(t), localaws.SQS(t)
	creds, err := ddb.Credentials.Retrieve(t.Context())
	require.NoError(t, err)
	t.Setenv("AWS_REGION", ddb.Region)
	t.Setenv("AWS_ACCESS_KEY_ID", creds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey)
	t.Setenv("AWS_PROFILE", "")
	cl := awsbackend.NewClients(aws.Config{Region: ddb.Region, Credentials: ddb.Credentials}, awsbackend.Endpoints{DynamoDB: ddb.URL, SQS: q.URL})
	suffix := strings.ReplaceAll(t.Name(), "/", "-") + time.Now().Format("150405.000000000")
	suffix = strings.ReplaceAll(suffix, ".", "")
	res, err := awsbackend.Setup(t.Context(), cl, awsbackend.SetupParams{Table: "reg-" + suffix, Queue: "reg-" + suffix, MaxReceives: 4})
	require.NoError(t, err)

	v := url.Values{"table": {res.Table}, "queue": {res.QueueURL}, "dynamodb_endpoint": {ddb.URL}, "sqs_endpoint": {q.URL}}
	b, err := backend.Open(t.Context(), "aws://?"+v.Encode(), backend.Config{})
	require.NoError(t, err)
	require.Equal(t, "aws", b.Name)
	require.Equal(t, 4, b.MaxReceives, "read from the redrive policy")
	require.NotNil(t, b.DeadLetter)
	require.NoError(t, b.Close())

	// By name, with the table and queue given.
	b, err = backend.Open(t.Context(), "aws", backend.Config{Table: res.Table, QueueURL: res.QueueURL, DynamoDBEndpoint: ddb.URL, SQSEndpoint: q.URL})
	require.NoError(t, err)
	require.NoError(t, b.Close())

	// A missing table is the caller's to fix.
	t.Setenv(awsbackend.EnvTable, "")
	_, err = backend.Open(t.Context(), "aws", backend.Config{QueueURL: res.QueueURL})
	var cfgErr *backend.ConfigError
	require.True(t, errors.As(err, &cfgErr), "%v", err)
}
