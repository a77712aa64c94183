package tailbuf

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBufferKeepsTheEnd(t *testing.T) {
	t.Parallel()
	b := New(5)
	_, _ = b.Write([]byte("abc"))
	require.Equal(t, "abc", b.String())
	n, err := b.Write([]byte("defg"))
	require.NoError(t, err)
	require.Equal(t, 4, n, "all of p is reported written")
	require.Equal(t, "cdefg", b.String())
	_, _ = b.Write([]byte(strings.Repeat("x", 10) + "12345"))
	require.Equal(t, "12345", b.String())
}
