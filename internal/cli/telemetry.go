package cli

import (
	"log/slog"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/telemetry"
)

// Telemetry is what a binary built with batoncli plugs into the commands
// that run work (run, serve, submit, replay): its OpenTelemetry providers
// (nil: the global ones) and its log handler (nil: the --log and
// --log-format logger on stderr).
type Telemetry struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	LogHandler     slog.Handler
}

// telemetry is the commands' telemetry on the engine called engine; tp,
// when set, records the spans in place of the binary's provider (run
// --trace).
func (e *env) telemetry(engine string, tp trace.TracerProvider) *telemetry.Telemetry {
	if tp == nil {
		tp = e.tel.TracerProvider
	}
	return telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: e.tel.MeterProvider, Engine: engine})
}
