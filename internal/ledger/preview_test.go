package ledger

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPreviewResult(t *testing.T) {
	t.Setenv("BATON_TEST_SECRET", "s3cr3t-value")
	// Short text: whole.
	p := PreviewResult([]byte(`{"ok":true}`))
	require.Equal(t, ResultPreview{Text: `{"ok":true}`, Bytes: 11}, p)
	require.Equal(t, `{"ok":true}`, p.Line(40))
	// No result.
	require.Equal(t, ResultPreview{}, PreviewResult(nil))
	require.Equal(t, "-", PreviewResult(nil).Line(40))
	// Binary: only its size.
	p = PreviewResult([]byte{0x7b, 0x00, 0xff, 0x7d})
	require.Equal(t, ResultPreview{Bytes: 4, Binary: true}, p)
	require.Equal(t, "(4 bytes)", p.Line(40))
	// Long text: cut at the bound on a character boundary, marked.
	long := strings.Repeat("é", ResultPreviewBytes) // two bytes each
	p = PreviewResult([]byte(long))
	require.True(t, p.Truncated)
	require.Equal(t, 2*ResultPreviewBytes, p.Bytes)
	require.LessOrEqual(t, len(p.Text), ResultPreviewBytes)
	require.Equal(t, strings.Repeat("é", ResultPreviewBytes/2), p.Text)
	require.Equal(t, strings.Repeat("é", 9)+"…", p.Line(10))
	// Far longer text is cut the same way.
	p = PreviewResult([]byte(strings.Repeat("x", 100*ResultPreviewBytes)))
	require.True(t, p.Truncated)
	require.Len(t, p.Text, ResultPreviewBytes)
	// Lines and tabs are text; a table shows the first line.
	p = PreviewResult([]byte("first\tline\nsecond"))
	require.False(t, p.Binary)
	require.Equal(t, "first line…", p.Line(40))
	// Secrets are masked, as in dead-letter reasons.
	p = PreviewResult([]byte("connected to postgres://app:hunter22@db/x with s3cr3t-value"))
	require.NotContains(t, p.Text, "hunter22")
	require.NotContains(t, p.Text, "s3cr3t-value")
}
