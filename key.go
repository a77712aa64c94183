package baton

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// namePattern is what job and asset names may contain: they appear in keys,
// message bodies and file names.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidName returns an error naming what is wrong when s is not a valid job
// or asset name (letters, digits, '_', '.', '-', at most 64, starting with a
// letter or digit). what says which kind of name it is ("job", "asset").
func ValidName(what, s string) error {
	if !namePattern.MatchString(s) {
		return fmt.Errorf("invalid %s name %q: want 1-64 letters, digits, '_', '.', '-', starting with a letter or digit", what, s)
	}
	return nil
}

// RunID names one run: one generation of one tick. Generation 1 is the
// scheduled run; a forced replay opens generation 2, 3, …
//
// RunID names one generation of one tick. Its string form is
// "job@2006-01-02T15:04:05Z#generation", e.g. "fx@2026-11-21T12:01:00Z#1".
type RunID struct {
	Job        string
	Nominal    time.Time
	Generation int
}

func (r RunID) String() string {
	return r.Job + "@" + r.Nominal.UTC().Format(time.RFC3339) + "#" + strconv.Itoa(r.Generation)
}

// TickKey is the run record's key: the run id without its generation.
func (r RunID) TickKey() string {
	return r.Job + "@" + r.Nominal.UTC().Format(time.RFC3339)
}

// ParseRunID parses the string form of a RunID.
func ParseRunID(s string) (RunID, error) {
	at := strings.IndexByte(s, '@')
	hash := strings.LastIndexByte(s, '#')
	if at <= 0 || hash < at {
		return RunID{}, fmt.Errorf("invalid run id %q: want job@RFC3339-time#generation", s)
	}
	job := s[:at]
	if err := ValidName("job", job); err != nil {
		return RunID{}, fmt.Errorf("invalid run id %q: %w", s, err)
	}
	nominal, err := time.Parse(time.RFC3339, s[at+1:hash])
	if err != nil {
		return RunID{}, fmt.Errorf("invalid run id %q: bad time: %w", s, err)
	}
	gen, err := strconv.Atoi(s[hash+1:])
	if err != nil || gen < 1 {
		return RunID{}, fmt.Errorf("invalid run id %q: generation must be a positive integer", s)
	}
	return RunID{Job: job, Nominal: nominal.UTC(), Generation: gen}, nil
}

// ItemKey is an item's idempotency key: run id + asset. Its string form is
// "<run id>/<asset>", e.g. "fx@2026-11-21T12:01:00Z#1/EURUSD".
type ItemKey struct {
	Run   RunID
	Asset string
}

func (k ItemKey) String() string { return k.Run.String() + "/" + k.Asset }

// ParseItemKey parses the string form of an ItemKey.
func ParseItemKey(s string) (ItemKey, error) {
	slash := strings.LastIndexByte(s, '/')
	if slash < 0 {
		return ItemKey{}, fmt.Errorf("invalid item key %q: want <run id>/<asset>", s)
	}
	run, err := ParseRunID(s[:slash])
	if err != nil {
		return ItemKey{}, fmt.Errorf("invalid item key %q: %w", s, err)
	}
	asset := s[slash+1:]
	if err := ValidName("asset", asset); err != nil {
		return ItemKey{}, fmt.Errorf("invalid item key %q: %w", s, err)
	}
	return ItemKey{Run: run, Asset: asset}, nil
}
