package lambdaapp_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lambdaapp"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	full := map[string]string{
		"BATON_TABLE":        "baton-Table-1",
		"BATON_QUEUE_URL":    "https://sqs.eu-west-1.amazonaws.com/123456789012/baton-WorkQueue",
		"BATON_DLQ_URL":      "https://sqs.eu-west-1.amazonaws.com/123456789012/baton-DeadLetterQueue",
		"BATON_MAX_RECEIVES": "5",
		"BATON_TRIGGER_SKEW": "30s",
		"BATON_LOG_LEVEL":    "debug",
	}
	without := func(names ...string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			m[k] = v
		}
		for _, n := range names {
			delete(m, n)
		}
		return m
	}
	with := func(k, v string) map[string]string {
		m := without()
		m[k] = v
		return m
	}

	t.Run("coordinator", func(t *testing.T) {
		t.Parallel()
		cfg, err := lambdaapp.LoadConfig(lambdaapp.Coordinator, env(without("BATON_DLQ_URL", "BATON_MAX_RECEIVES")))
		require.NoError(t, err)
		require.Equal(t, lambdaapp.Config{
			Function: lambdaapp.Coordinator, Table: "baton-Table-1", QueueURL: full["BATON_QUEUE_URL"],
			TriggerSkew: 30 * time.Second, TriggerAge: lambdaapp.DefaultTriggerAge, LogLevel: slog.LevelDebug,
			Service: lambdaapp.DefaultService, Namespace: lambdaapp.DefaultNamespace,
		}, cfg)
	})
	t.Run("consumer", func(t *testing.T) {
		t.Parallel()
		cfg, err := lambdaapp.LoadConfig(lambdaapp.Consumer, env(without("BATON_TRIGGER_SKEW", "BATON_LOG_LEVEL")))
		require.NoError(t, err)
		require.Equal(t, lambdaapp.Config{
			Function: lambdaapp.Consumer, Table: "baton-Table-1", QueueURL: full["BATON_QUEUE_URL"],
			DLQURL: full["BATON_DLQ_URL"], MaxReceives: 5,
			TriggerSkew: lambdaapp.DefaultTriggerSkew, LogLevel: slog.LevelInfo,
			Service: lambdaapp.DefaultService, Namespace: lambdaapp.DefaultNamespace,
		}, cfg)
	})
	t.Run("service, namespace, never below Lambda's level", func(t *testing.T) {
		t.Parallel()
		m := with("BATON_SERVICE_NAME", "baton-prod")
		m["BATON_METRICS_NAMESPACE"] = "Acme/Baton"
		m["AWS_LAMBDA_LOG_LEVEL"] = "WARN" // above BATON_LOG_LEVEL=debug
		cfg, err := lambdaapp.LoadConfig(lambdaapp.Consumer, env(m))
		require.NoError(t, err)
		require.Equal(t, "baton-prod", cfg.Service)
		require.Equal(t, "Acme/Baton", cfg.Namespace)
		require.Equal(t, slog.LevelWarn, cfg.LogLevel)
		for level, want := range map[string]slog.Level{"TRACE": slog.LevelDebug, "info": slog.LevelInfo, "FATAL": slog.LevelError} {
			m["AWS_LAMBDA_LOG_LEVEL"] = level
			cfg, err := lambdaapp.LoadConfig(lambdaapp.Consumer, env(m))
			require.NoError(t, err)
			require.Equal(t, want, cfg.LogLevel, level)
		}
		m["BATON_LOG_LEVEL"], m["AWS_LAMBDA_LOG_LEVEL"] = "warn", "INFO" // the template's LogLevel=warn
		cfg, err = lambdaapp.LoadConfig(lambdaapp.Consumer, env(m))
		require.NoError(t, err)
		require.Equal(t, slog.LevelWarn, cfg.LogLevel)
	})

	bad := []struct {
		name string
		f    lambdaapp.Function
		env  map[string]string
		want []string
	}{
		{"no table", lambdaapp.Coordinator, without("BATON_TABLE"), []string{"BATON_TABLE is not set"}},
		{"blank table", lambdaapp.Coordinator, with("BATON_TABLE", "  "), []string{"BATON_TABLE is not set"}},
		{"nothing set", lambdaapp.Consumer, map[string]string{}, []string{
			"BATON_TABLE is not set", "BATON_QUEUE_URL is not set",
			"BATON_DLQ_URL is not set", "BATON_MAX_RECEIVES is not set"}},
		{"consumer without DLQ", lambdaapp.Consumer, without("BATON_DLQ_URL"), []string{"BATON_DLQ_URL is not set"}},
		{"queue URL not a URL", lambdaapp.Coordinator, with("BATON_QUEUE_URL", "baton-WorkQueue"), []string{`BATON_QUEUE_URL="baton-WorkQueue": not an http(s) queue URL`}},
		{"DLQ URL without host", lambdaapp.Consumer, with("BATON_DLQ_URL", "https:///q"), []string{"BATON_DLQ_URL"}},
		{"max receives zero", lambdaapp.Consumer, with("BATON_MAX_RECEIVES", "0"), []string{`BATON_MAX_RECEIVES="0": not a positive integer`}},
		{"max receives word", lambdaapp.Consumer, with("BATON_MAX_RECEIVES", "five"), []string{`BATON_MAX_RECEIVES="five"`}},
		{"skew not a duration", lambdaapp.Coordinator, with("BATON_TRIGGER_SKEW", "60"), []string{`BATON_TRIGGER_SKEW="60": not a non-negative duration`}},
		{"negative skew", lambdaapp.Coordinator, with("BATON_TRIGGER_SKEW", "-1s"), []string{"BATON_TRIGGER_SKEW"}},
		{"bad age", lambdaapp.Coordinator, with("BATON_TRIGGER_MAX_AGE", "a day"), []string{`BATON_TRIGGER_MAX_AGE="a day": not a non-negative duration`}},
		{"bad log level", lambdaapp.Consumer, with("BATON_LOG_LEVEL", "loud"), []string{`BATON_LOG_LEVEL="loud": not a log level`}},
		{"bad Lambda log level", lambdaapp.Consumer, with("AWS_LAMBDA_LOG_LEVEL", "LOUD"), []string{`AWS_LAMBDA_LOG_LEVEL="LOUD": not a Lambda log level`}},
		{"AWS namespace", lambdaapp.Consumer, with("BATON_METRICS_NAMESPACE", "AWS/Lambda"), []string{`BATON_METRICS_NAMESPACE="AWS/Lambda": not a custom CloudWatch namespace`}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := lambdaapp.LoadConfig(tc.f, env(tc.env))
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}

	t.Run("unknown function", func(t *testing.T) {
		t.Parallel()
		_, err := lambdaapp.LoadConfig("scheduler", env(full))
		require.ErrorContains(t, err, `unknown function "scheduler"`)
	})
}

func TestVariables(t *testing.T) {
	t.Parallel()
	names := func(f lambdaapp.Function) []string {
		var out []string
		for _, v := range lambdaapp.Variables(f) {
			out = append(out, v.Name)
		}
		return out
	}
	common := []string{"BATON_TABLE", "BATON_QUEUE_URL", "BATON_LOG_LEVEL", "BATON_SERVICE_NAME", "BATON_METRICS_NAMESPACE", "BATON_JOB_QUEUE_URLS"}
	require.ElementsMatch(t, append(common, "BATON_TRIGGER_SKEW", "BATON_TRIGGER_MAX_AGE"), names(lambdaapp.Coordinator))
	require.ElementsMatch(t, append(common, "BATON_DLQ_URL", "BATON_MAX_RECEIVES"), names(lambdaapp.Consumer))
	// Every variable LoadConfig reads is listed: a config read from only
	// the listed variables equals one read from everything.
	for _, f := range []lambdaapp.Function{lambdaapp.Coordinator, lambdaapp.Consumer} {
		all := map[string]string{
			"BATON_TABLE": "t", "BATON_QUEUE_URL": "http://q/1", "BATON_DLQ_URL": "http://q/2",
			"BATON_MAX_RECEIVES": "4", "BATON_TRIGGER_SKEW": "5s", "BATON_LOG_LEVEL": "warn",
			"BATON_SERVICE_NAME": "s", "BATON_METRICS_NAMESPACE": "N", "BATON_JOB_QUEUE_URLS": "q=http://q/3",
		}
		listed := map[string]string{}
		for _, n := range names(f) {
			listed[n] = all[n]
		}
		a, err := lambdaapp.LoadConfig(f, env(all))
		require.NoError(t, err)
		b, err := lambdaapp.LoadConfig(f, env(listed))
		require.NoError(t, err)
		require.Equal(t, a, b)
	}
}

func TestParseJobQueueURLs(t *testing.T) {
	t.Parallel()
	got, err := lambdaapp.ParseJobQueueURLs(" crawl=https://sqs.eu-west-1.amazonaws.com/1/crawl , noisy=http://127.0.0.1:4576/1/noisy,")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"crawl": "https://sqs.eu-west-1.amazonaws.com/1/crawl", "noisy": "http://127.0.0.1:4576/1/noisy"}, got)
	for in, want := range map[string]string{
		"crawl":                       `"crawl": want name=url`,
		"=https://q/1":                `want name=url`,
		"crawl=queue":                 "queue crawl: not an http(s) queue URL",
		"a=https://q/1,a=https://q/2": "queue a named twice",
	} {
		_, err := lambdaapp.ParseJobQueueURLs(in)
		require.ErrorContains(t, err, want, in)
	}
}

func FuzzParseJobQueueURLs(f *testing.F) {
	f.Add("crawl=https://sqs.eu-west-1.amazonaws.com/1/crawl,noisy=http://q/2")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := lambdaapp.ParseJobQueueURLs(s)
		if err != nil {
			return
		}
		for name, url := range got {
			require.NotEmpty(t, name)
			require.NotContains(t, name, ",")
			require.NotEmpty(t, url)
		}
	})
}
