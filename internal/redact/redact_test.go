package redact_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/redact"
)

func TestPasswords(t *testing.T) {
	t.Parallel()
	sec := redact.FromEnviron(nil)
	for in, want := range map[string]string{
		"no secret here":                                         "no secret here",
		"mailto user@example.com":                                "mailto user@example.com",
		"https://u:p@h/x and https://v:q@k/y":                    "https://u:[REDACTED]@h/x and https://v:[REDACTED]@k/y",
		"PASSWORD = 'a b' host=x":                                "PASSWORD = [REDACTED] host=x",
		"postgres://only-user@h/db":                              "postgres://only-user@h/db",
		"dial postgres://baton:hunter2@db:5432/baton?ssl=1: EOF": "dial postgres://baton:[REDACTED]@db:5432/baton?ssl=1: EOF",
	} {
		require.Equal(t, want, sec.String(in), in)
	}
}

func TestEnvironmentSecrets(t *testing.T) {
	t.Parallel()
	sec := redact.FromEnviron([]string{
		"BATON_AUTH_SECRET=0123456789abcdef",
		"BATON_PG_DSN=host=db user=baton password=s3cr3t-pw dbname=baton",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG",
		"AWS_ACCESS_KEY_ID=AKIAEXAMPLE123", // an identifier, not a secret
		"BATON_TOKEN=short",                // too short to mask safely
		"HOME=/root",
	})
	out := sec.String("refused bearer 0123456789abcdef; login s3cr3t-pw; sig wJalrXUtnFEMI/K7MDENG by AKIAEXAMPLE123 short")
	for _, s := range []string{"0123456789abcdef", "s3cr3t-pw", "wJalrXUtnFEMI/K7MDENG"} {
		require.NotContains(t, out, s)
	}
	require.Contains(t, out, "AKIAEXAMPLE123")
	require.Contains(t, out, "short")
	require.Equal(t, 3, strings.Count(out, redact.Redacted), out)
}

func TestKey(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"payload", "Result", "auth_secret", "dsn", "pg_dsn", "item_payload"} {
		require.True(t, redact.Key(k), k)
	}
	for _, k := range []string{"key", "run", "job", "error", "resultless"} {
		require.False(t, redact.Key(k), k)
	}
}

func FuzzString(f *testing.F) {
	f.Add("postgres://u:p@h/db password=x")
	sec := redact.FromEnviron([]string{"X_SECRET=abcdefgh"})
	f.Fuzz(func(t *testing.T, s string) {
		out := sec.String(s)
		require.NotContains(t, out, "abcdefgh")
		if !strings.Contains(s, "://") && !strings.Contains(strings.ToLower(s), "password") && !strings.Contains(s, "abcdefgh") {
			require.Equal(t, s, out)
		}
	})
}
