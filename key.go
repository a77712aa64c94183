package baton

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/rfc3339"
)

// namePattern is what job and asset names may contain: they appear in keys,
// message bodies and file names. validName matches it without the
// regular expression machinery (every key parsed checks two names).
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// validName reports whether namePattern matches s.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// ValidName checks a name of kind what: 1-64 of [A-Za-z0-9_.-].
func ValidName(what, s string) error {
	if !validName(s) {
		return fmt.Errorf("invalid %s name %s: want 1-64 letters, digits, '_', '.', '-', starting with a letter or digit", what, quote(s))
	}
	return nil
}

// RunID names one run: "job@time#generation", or "job+key#generation".
type RunID struct {
	Job        string
	Nominal    time.Time
	Submission string // a submission's dedupe key; "" for a tick
	Generation int
}

// String returns the run id's canonical form.
func (r RunID) String() string {
	// Built in one buffer: one allocation (the string), where every
	// ledger write and message names its run.
	var buf [96]byte
	return string(r.appendTo(buf[:0]))
}

// appendTo appends the run id's canonical form to b.
func (r RunID) appendTo(b []byte) []byte {
	b = append(b, r.Job...)
	if r.Submission != "" {
		b = append(b, '+')
		b = append(b, r.Submission...)
	} else {
		b = append(b, '@')
		b = r.Nominal.UTC().AppendFormat(b, time.RFC3339)
	}
	b = append(b, '#')
	return strconv.AppendInt(b, int64(r.Generation), 10)
}

// Submitted reports whether r is the run of a submission.
func (r RunID) Submitted() bool { return r.Submission != "" }

// maxKeyLen bounds the text of a run id or item key: a job and an asset
// of 64 bytes, the time, the generation and the separators fit well
// within it. Longer input is refused before it is parsed or quoted.
const maxKeyLen = 256

// maxGeneration bounds a generation's digits.
const maxGeneration = 1_000_000_000

// ParseRunID parses a RunID's canonical string form.
func ParseRunID(s string) (RunID, error) {
	if len(s) > maxKeyLen {
		return RunID{}, fmt.Errorf("invalid run id %s: longer than %d bytes", quote(s), maxKeyLen)
	}
	at := strings.IndexByte(s, '@')
	hash := strings.LastIndexByte(s, '#')
	if at < 0 {
		if plus := strings.IndexByte(s, '+'); plus > 0 && hash > plus {
			return parseSubmissionRunID(s, plus, hash)
		}
	}
	if at <= 0 || hash < at {
		return RunID{}, fmt.Errorf("invalid run id %s: want job@RFC3339-time#generation", quote(s))
	}
	job := s[:at]
	if err := ValidName("job", job); err != nil {
		return RunID{}, fmt.Errorf("invalid run id %s: %w", quote(s), err)
	}
	nominal, err := rfc3339.Parse(s[at+1 : hash])
	if err != nil {
		return RunID{}, fmt.Errorf("invalid run id %s: bad time: %w", quote(s), err)
	}
	gen, err := parseGeneration(s[hash+1:])
	if err != nil {
		return RunID{}, fmt.Errorf("invalid run id %s: %w", quote(s), err)
	}
	id := RunID{Job: job, Nominal: nominal, Generation: gen}
	var buf [96]byte
	if c := id.appendTo(buf[:0]); string(c) != s {
		want := string(c) // c is not passed on: buf stays on the stack
		return RunID{}, fmt.Errorf("invalid run id %s: not canonical, want %s (UTC, whole seconds, Z)", quote(s), want)
	}
	return id, nil
}

// parseSubmissionRunID parses "job+submission#generation", s[plus] the
// '+' and s[hash] the '#'.
func parseSubmissionRunID(s string, plus, hash int) (RunID, error) {
	job, sub := s[:plus], s[plus+1:hash]
	if err := ValidName("job", job); err != nil {
		return RunID{}, fmt.Errorf("invalid run id %s: %w", quote(s), err)
	}
	if err := ValidName("submission", sub); err != nil {
		return RunID{}, fmt.Errorf("invalid run id %s: %w", quote(s), err)
	}
	gen, err := parseGeneration(s[hash+1:])
	if err != nil {
		return RunID{}, fmt.Errorf("invalid run id %s: %w", quote(s), err)
	}
	return RunID{Job: job, Submission: sub, Generation: gen}, nil
}

// parseGeneration parses a positive decimal without sign or leading zero.
func parseGeneration(s string) (int, error) {
	if s == "" || s[0] == '0' || strings.TrimLeft(s, "0123456789") != "" || len(s) > 10 {
		return 0, errors.New("generation must be a positive integer without sign or leading zero")
	}
	gen, err := strconv.Atoi(s)
	if err != nil || gen < 1 || gen > maxGeneration {
		return 0, fmt.Errorf("generation must be within 1..%d", maxGeneration)
	}
	return gen, nil
}

// quote quotes s for an error message, cut to a bounded length.
func quote(s string) string {
	const max = 96
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:max]) + fmt.Sprintf("… (%d bytes)", len(s))
}

// ItemKey is an item's idempotency key: its run and asset.
type ItemKey struct {
	Run   RunID
	Asset string
}

// String returns the key's canonical form, "<run id>/<asset>".
func (k ItemKey) String() string {
	var buf [128]byte
	b := append(k.Run.appendTo(buf[:0]), '/')
	return string(append(b, k.Asset...))
}

// ParseItemKey parses an ItemKey's canonical string form.
func ParseItemKey(s string) (ItemKey, error) {
	if len(s) > maxKeyLen {
		return ItemKey{}, fmt.Errorf("invalid item key %s: longer than %d bytes", quote(s), maxKeyLen)
	}
	slash := strings.LastIndexByte(s, '/')
	if slash < 0 {
		return ItemKey{}, fmt.Errorf("invalid item key %s: want <run id>/<asset>", quote(s))
	}
	run, err := ParseRunID(s[:slash])
	if err != nil {
		return ItemKey{}, fmt.Errorf("invalid item key: %w", err)
	}
	asset := s[slash+1:]
	if err := ValidName("asset", asset); err != nil {
		return ItemKey{}, fmt.Errorf("invalid item key %s: %w", quote(s), err)
	}
	return ItemKey{Run: run, Asset: asset}, nil
}
