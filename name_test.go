package baton

import (
	"strings"
	"testing"
)

// nameCorpus are names valid and not: every class of byte first and
// later, the length bounds, bytes that are not ASCII, a trailing newline.
var nameCorpus = []string{
	"", "a", "Z", "0", "_", ".", "-", "a_", "a.", "a-", "a b", "a/b", "a@b", "a#b", "a+b", "é", "aé", "a\n", "\na",
	strings.Repeat("a", 64), strings.Repeat("a", 65), "A" + strings.Repeat("-", 63), "A" + strings.Repeat("-", 64),
	"EURUSD", "A00001", "job.v2-x_y", "a\x00",
}

// validName accepts exactly the names namePattern matches.
func TestValidNameAsPattern(t *testing.T) {
	t.Parallel()
	for _, s := range nameCorpus {
		if got, want := validName(s), namePattern.MatchString(s); got != want {
			t.Errorf("validName(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

func FuzzValidName(f *testing.F) {
	for _, s := range nameCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validName(s), namePattern.MatchString(s); got != want {
			t.Fatalf("validName(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
