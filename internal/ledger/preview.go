package ledger

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/redact"
)

// ResultPreviewBytes bounds the part of an item's result that people are
// shown (baton status --run, the dashboard's run page), as a dead
// letter's reason is bounded: a result may be as large as the store
// allows.
const ResultPreviewBytes = 1024

// ResultPreview is an item's result as people are shown it.
type ResultPreview struct {
	// Text is the result when it is text (valid UTF-8, printable but for
	// tabs and line breaks): its first ResultPreviewBytes bytes at most,
	// cut on a character boundary, with the secrets package redact masks
	// (passwords in URLs and DSNs, the environment's secrets). "" for a
	// binary result.
	Text string
	// Bytes is the whole result's size.
	Bytes int
	// Truncated: Text is the result's beginning only.
	Truncated bool
	// Binary: the result is not text; only its size is shown.
	Binary bool
}

// PreviewResult returns what people are shown of result.
func PreviewResult(result []byte) ResultPreview {
	p := ResultPreview{Bytes: len(result)}
	if len(result) == 0 {
		return p
	}
	if !utf8.Valid(result) || strings.IndexFunc(string(result), func(r rune) bool {
		return !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r'
	}) >= 0 {
		p.Binary = true
		return p
	}
	// Mask before cutting, with some room, so that a secret at the cut is
	// masked whole rather than shown in part.
	s := redact.String(string(result[:min(len(result), 2*ResultPreviewBytes)]))
	if len(s) > ResultPreviewBytes {
		s = strings.ToValidUTF8(s[:ResultPreviewBytes], "")
		p.Truncated = true
	}
	p.Truncated = p.Truncated || len(result) > 2*ResultPreviewBytes
	p.Text = s
	return p
}

// Line is the preview as one line of at most n runes (n >= 2) for a
// table: the text's first line, with "…" where it is cut, or the size of
// a binary result; "-" for no result.
func (p ResultPreview) Line(n int) string {
	switch {
	case p.Bytes == 0:
		return "-"
	case p.Binary:
		return "(" + strconv.Itoa(p.Bytes) + " bytes)"
	}
	s, cut := p.Text, p.Truncated
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s, cut = s[:i], true
	}
	s = strings.ReplaceAll(s, "\t", " ")
	if r := []rune(s); len(r) > n {
		s, cut = string(r[:n-1]), true
	} else if cut && len(r) == n {
		s = string(r[:n-1])
	}
	if cut {
		s += "…"
	}
	return s
}
