// Package jsonlog makes baton's JSON log lines, shaped as AWS Lambda
// Powertools shapes them (Go has no Powertools), so that the queries and
// dashboards written for Powertools functions work on baton's:
//
//	{"timestamp":"2026-11-21T12:01:07.042Z","level":"INFO","message":"item",
//	 "service":"baton-prod","cold_start":true,"function_name":"baton-prod-Consumer-…",
//	 "function_request_id":"8f5c…","xray_trace_id":"1-6741…",
//	 "phase":"item","job":"fx","run":"fx@2026-11-21T12:01:00Z#1","key":"…","processing_ms":201.4}
//
// The handler renames slog's time, level and msg to timestamp (RFC 3339,
// milliseconds, UTC), level (DEBUG, INFO, WARN, ERROR) and message, writes
// every duration as a number of milliseconds under its key with "_ms"
// appended, and redacts (package redact): the values of keys that carry
// payloads, results or secrets are replaced by "[REDACTED]", and
// passwords in URLs and DSNs and the environment's secrets are masked in
// every string and error.
package jsonlog

import (
	"io"
	"log/slog"
	"time"

	"github.com/batonhq/baton/internal/redact"
)

// Redacted replaces a sensitive value.
const Redacted = redact.Redacted

// Options configure a logger.
type Options struct {
	// Level is the lowest level written; nil means INFO.
	Level slog.Leveler
	// Service is the "service" of every line; "" leaves it out.
	Service string
}

// New returns a logger writing JSON lines to w.
func New(w io.Writer, o Options) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: o.Level, ReplaceAttr: replace})
	l := slog.New(h)
	if o.Service != "" {
		l = l.With(slog.String("service", o.Service))
	}
	return l
}

func replace(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 {
		switch a.Key {
		case slog.TimeKey:
			if t, ok := a.Value.Any().(time.Time); ok {
				return slog.String("timestamp", t.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
			}
			a.Key = "timestamp"
			return a
		case slog.LevelKey:
			if l, ok := a.Value.Any().(slog.Level); ok {
				return slog.String("level", levelName(l))
			}
			return a
		case slog.MessageKey:
			a.Key = "message"
			return a
		}
	}
	if a.Value.Kind() == slog.KindDuration && !redact.Key(a.Key) {
		d := a.Value.Duration()
		return slog.Float64(a.Key+"_ms", float64(d.Microseconds())/1000)
	}
	return redact.Attr(groups, a)
}

// levelName is l as Powertools writes it.
func levelName(l slog.Level) string {
	switch {
	case l < slog.LevelInfo:
		return "DEBUG"
	case l < slog.LevelWarn:
		return "INFO"
	case l < slog.LevelError:
		return "WARN"
	}
	return "ERROR"
}
