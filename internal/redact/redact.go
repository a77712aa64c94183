// Package redact keeps payloads, results and secrets out of what baton
// writes for people to read: log lines (package jsonlog) and dead-letter
// reasons (package consumer).
//
// Three rules, applied by default:
//
//   - Keys: the value of an attribute whose key names a payload, a result
//     or a secret (Key) is never written; Redacted stands in for it.
//   - Passwords in text: user:password@ in a URL or DSN and password=…
//     in a key/value DSN are masked wherever they appear (String).
//   - Secrets of the environment: the values of environment variables
//     whose names say they hold a secret (…SECRET…, …PASSWORD…, …TOKEN…,
//     …DSN…, …_KEY) are masked wherever they appear, such as a shared
//     secret quoted in an error.
package redact

import (
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Redacted stands in for what is not written.
const Redacted = "[REDACTED]"

// Key reports whether the values of attribute key are never written:
// payloads and results of items, and secrets.
func Key(key string) bool {
	k := strings.ToLower(key)
	switch k {
	case "payload", "result", "results", "input", "inputs", "body", "secret", "password", "dsn", "token", "authorization":
		return true
	}
	for _, suffix := range []string{"_payload", "_result", "_secret", "_password", "_token", "_dsn"} {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// password matches the password of user:password@ in a URL or DSN, and
// key=value DSN passwords (password=…).
var password = regexp.MustCompile(`(://[^:/@\s]*:)[^@\s]+@|((?i:password)\s*=\s*)('[^']*'|[^\s)'";,&]+)`)

// String returns s with passwords in URLs and DSNs and the secrets of the
// environment masked.
func String(s string) string { return env().String(s) }

// Secrets masks passwords and a set of secret values.
type Secrets struct{ values []string }

// minSecret is the shortest value masked: shorter values ("1", "true")
// would mask ordinary text.
const minSecret = 6

// FromEnviron returns the secrets of environ ("NAME=value" entries, as
// os.Environ returns them): the values of variables whose names say they
// hold a secret, and the passwords of DSNs among them.
func FromEnviron(environ []string) *Secrets {
	s := &Secrets{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || len(value) < minSecret || !secretName(name) {
			continue
		}
		s.values = append(s.values, value)
		if m := password.FindStringSubmatch(value); m != nil {
			if p := passwordOf(m[0]); len(p) >= minSecret {
				s.values = append(s.values, p)
			}
		}
	}
	// Longest first: a DSN is masked whole before its password alone.
	slices.SortFunc(s.values, func(a, b string) int { return len(b) - len(a) })
	return s
}

func passwordOf(match string) string {
	if i := strings.Index(match, "://"); i >= 0 {
		rest := match[i+3:]
		if _, p, ok := strings.Cut(rest, ":"); ok {
			return strings.TrimSuffix(p, "@")
		}
	}
	if _, p, ok := strings.Cut(match, "="); ok {
		return strings.Trim(strings.TrimSpace(p), "'")
	}
	return ""
}

func secretName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"SECRET", "PASSWORD", "PASSWD", "TOKEN", "DSN", "CREDENTIAL"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return strings.HasSuffix(n, "_KEY") && !strings.HasSuffix(n, "ACCESS_KEY_ID")
}

// String returns s with passwords in URLs and DSNs and s's secrets masked.
func (sec *Secrets) String(s string) string {
	for _, v := range sec.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	if !strings.Contains(s, "@") && !strings.Contains(strings.ToLower(s), "password") {
		return s
	}
	return password.ReplaceAllStringFunc(s, func(m string) string {
		sub := password.FindStringSubmatch(m)
		if sub[1] != "" {
			return sub[1] + Redacted + "@"
		}
		return sub[2] + Redacted
	})
}

// env is the secrets of this process's environment, read once.
var env = sync.OnceValue(func() *Secrets { return FromEnviron(os.Environ()) })

// Attr applies the three rules to a log attribute: a ReplaceAttr for
// slog handlers (package jsonlog uses it; so does the CLI's text logger).
func Attr(_ []string, a slog.Attr) slog.Attr {
	if Key(a.Key) {
		return slog.String(a.Key, Redacted)
	}
	switch a.Value.Kind() {
	case slog.KindString:
		if s := a.Value.String(); s != "" {
			if masked := String(s); masked != s {
				return slog.String(a.Key, masked)
			}
		}
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			return slog.String(a.Key, String(err.Error()))
		}
	}
	return a
}
