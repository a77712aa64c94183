package jsonlog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/jsonlog"
)

func TestShape(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := jsonlog.New(&buf, jsonlog.Options{Level: slog.LevelDebug, Service: "svc"})
	log.Warn("item", slog.Duration("processing", 1500*time.Microsecond), slog.String("job", "fx"), slog.Int("fence", 3))
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	require.Equal(t, "WARN", line["level"])
	require.Equal(t, "item", line["message"])
	require.Equal(t, "svc", line["service"])
	require.Equal(t, 1.5, line["processing_ms"])
	require.NotContains(t, line, "processing")
	require.NotContains(t, line, "msg")
	require.NotContains(t, line, "time")
	ts, err := time.Parse(time.RFC3339Nano, line["timestamp"].(string))
	require.NoError(t, err)
	require.Equal(t, time.UTC, ts.Location())
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, line["timestamp"])
	// The first keys are Powertools'.
	require.True(t, strings.HasPrefix(buf.String(), `{"timestamp":`), buf.String())
	require.Less(t, strings.Index(buf.String(), `"level"`), strings.Index(buf.String(), `"message"`))
}

func TestLevels(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := jsonlog.New(&buf, jsonlog.Options{Level: slog.LevelWarn})
	log.Info("dropped")
	log.Debug("dropped")
	log.Error("kept")
	require.Equal(t, 1, strings.Count(buf.String(), "\n"))
	require.Contains(t, buf.String(), `"level":"ERROR"`)
	require.NotContains(t, buf.String(), `"service"`)
}

// TestRedaction: payloads, results and secrets never reach a log line,
// nor a password inside a DSN or URL, in a string or an error.
func TestRedaction(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := jsonlog.New(&buf, jsonlog.Options{})
	log.Info("x",
		slog.String("payload", `{"card":"4111"}`),
		slog.Any("result", []byte("top-secret-result")),
		slog.String("auth_secret", "s3cr3t"),
		slog.String("dsn", "postgres://baton:hunter2@db/baton"),
		slog.String("note", "connect postgres://baton:hunter2@db:5432/baton?sslmode=require failed"),
		slog.Any("error", errors.New("dial host=db user=baton password=hunter2 dbname=x: refused")),
		slog.Group("item", slog.String("result", "nested-result")),
		slog.String("key", "fx@2026-11-21T12:01:00Z#1/EURUSD"),
	)
	out := buf.String()
	for _, secret := range []string{"4111", "top-secret-result", "s3cr3t", "hunter2", "nested-result"} {
		require.NotContains(t, out, secret)
	}
	require.Contains(t, out, "postgres://baton:[REDACTED]@db:5432/baton?sslmode=require")
	require.Contains(t, out, "password=[REDACTED] dbname=x")
	require.Contains(t, out, "fx@2026-11-21T12:01:00Z#1/EURUSD", "a key is not a secret")
}
