package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/cli"
)

// The run page shows each SUCCEEDED item's result, bounded and masked as
// a dead letter's reason is, escaped like any outside text: the first
// line as the summary, the text (at most 1 KiB, marked when cut) below
// it, the size of a binary result.
func TestRunPageShowsResults(t *testing.T) {
	t.Parallel()
	results := map[string][]byte{
		"short":   []byte(`{"rows":42}`),
		"long":    []byte(strings.Repeat("0123456789", 300)),
		"bin":     {0x7b, 0x00, 0xff, 0x7d},
		"hostile": []byte(hostile),
	}
	catalog, err := baton.NewCatalog(baton.Job{Name: "results", Schedule: "rate(1 minute)", Assets: []string{"bin", "hostile", "long", "short"},
		Processor: baton.ProcessorFunc(func(_ context.Context, t baton.Task) ([]byte, error) { return results[t.Asset], nil })})
	require.NoError(t, err)
	store := filepath.Join(t.TempDir(), "baton.db")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, cli.Main(t.Context(), catalog, []string{"run", "--once", "--store", store, "--json"}, &out, &errOut), errOut.String())
	var once struct {
		Run struct {
			ID string `json:"id"`
		} `json:"run"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &once))

	base := serveUI(t, catalog, "--store", store)
	code, body := get(t, withJar(t), runURL(base, once.Run.ID))
	require.Equal(t, http.StatusOK, code, body)
	cell := func(asset string) string {
		m := regexp.MustCompile(`(?s)<tr data-asset="` + asset + `" data-state="SUCCEEDED">.*?<td class="result">(.*?)</td>`).FindStringSubmatch(body)
		require.NotNil(t, m, "the row of %s", asset)
		return m[1]
	}
	require.Equal(t, `<details><summary>{&#34;rows&#34;:42}</summary><pre class="result">{&#34;rows&#34;:42}</pre></details>`, cell("short"))
	long := cell("long")
	require.Contains(t, long, "<summary>"+strings.Repeat("0123456789", 3)+"012345678…</summary>")
	require.Contains(t, long, `<pre class="result">`+strings.Repeat("0123456789", 300)[:1024]+"</pre>")
	require.Contains(t, long, "the first 1024 of 3000 bytes")
	require.Equal(t, "(4 bytes, not text)", cell("bin"))
	require.NotContains(t, body, "<script>window.__pwned")
	require.Contains(t, cell("hostile"), "&lt;script&gt;window.__pwned=1&lt;/script&gt;")
}
