package ui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

// TestSubmissionsAndRunTimeLists: the jobs page lists a job's
// submissions and shows a paused job; a submission's and a run-time
// list's run pages draw their items from the stored pages, a few pages
// at a time; the actions the CLI refuses on them are refused.
func TestSubmissionsAndRunTimeLists(t *testing.T) {
	t.Parallel()
	s := newListStore(t)
	base := s.serve(t)
	c := withJar(t)

	code, body := get(t, c, base+"/")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<li data-run="`+attr(s.submission)+`">`)
	require.Contains(t, body, `>order-42</a>`)
	require.Contains(t, body, `69 SUCCEEDED`)
	require.Contains(t, body, `1 DEAD`)
	require.Contains(t, body, `class="pill paused"`)
	require.Contains(t, body, "paused since")
	require.Contains(t, body, "computed per run")
	requireEscaped(t, body)

	code, body = get(t, c, base+"/jobs/orders")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `id="submissions"`)
	require.Contains(t, body, `<tr data-run="`+attr(s.submission)+`" data-state="partial">`)

	code, body = get(t, c, base+"/jobs/sweep")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<tr data-run="`+s.sweep.String()+`" data-state="complete">`)
	require.Contains(t, body, `300 SUCCEEDED`)
	require.Contains(t, body, `id="paused"`)
	requireEscaped(t, body)

	t.Run("submission timeline", func(t *testing.T) {
		code, body := get(t, c, runURL(base, s.submission.String()))
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, submissionItems, strings.Count(body, `<g class="row"`), "a bar per submitted item")
		require.Contains(t, body, `<g class="row" data-asset="order-0000" data-state="SUCCEEDED"`)
		require.Contains(t, body, `<g class="row" data-asset="`+deadOrder+`" data-state="DEAD"`)
		require.Contains(t, body, "Items 1–70 of the run")
		require.Contains(t, body, "The whole run: 69 SUCCEEDED, 1 DEAD, 0 CANCELLED.")
		require.NotContains(t, body, `id="window-next"`)
		require.NotContains(t, body, "never shown", "payloads are not shown")
		require.NotContains(t, body, `data-action="replay-item"`)
		require.NotContains(t, body, `data-action="cancel"`)
		require.NotContains(t, body, `data-action="replay-tick"`)
		require.Contains(t, body, "A submission has no tick to replay")
		requireEscaped(t, body)
	})

	t.Run("run-time list in windows", func(t *testing.T) {
		code, body := get(t, c, runURL(base, s.sweep.String()))
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, 256, strings.Count(body, `<g class="row"`), "four pages of 64 items, not the whole run")
		require.Contains(t, body, "Items 1–256 of the run")
		require.Contains(t, body, `data-asset="acct-0255"`)
		require.NotContains(t, body, `data-asset="acct-0256"`)
		require.Contains(t, body, `id="window-next"`)
		require.Contains(t, body, `data-action="replay-tick"`, "a run-time list's tick replays")

		code, body = get(t, c, base+"/run?"+url.Values{"id": {s.sweep.String()}, "from": {"4"}}.Encode())
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, sweepItems-256, strings.Count(body, `<g class="row"`))
		require.Contains(t, body, "Items 257–300 of the run")
		require.Contains(t, body, `data-asset="acct-0299" data-state="SUCCEEDED"`)
		require.Contains(t, body, `id="window-prev"`)
		require.NotContains(t, body, `id="window-next"`)

		code, body = get(t, c, base+"/run?"+url.Values{"id": {s.sweep.String()}, "from": {"<b>x"}}.Encode())
		require.Equal(t, http.StatusBadRequest, code, body)
		require.Contains(t, body, "from: want a page number")
		require.NotContains(t, body, "<b>x")
	})

	t.Run("hostile run ids", func(t *testing.T) {
		for _, id := range []string{`orders+<script>window.__pwned=1</script>#1`, `orders+order-42#"><img src=x>`} {
			code, body := get(t, c, runURL(base, id))
			require.Equal(t, http.StatusBadRequest, code, body)
			require.NotContains(t, body, "<script>window.__pwned")
			require.NotContains(t, body, "<img src=x")
		}
		code, body := get(t, c, runURL(base, "orders+order-43#1"))
		require.Equal(t, http.StatusNotFound, code, body)
	})

	t.Run("a submission by its key", func(t *testing.T) {
		find := func(key string) string { return base + "/jobs/orders/submission?" + url.Values{"key": {key}}.Encode() }
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, find("order-42"), nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/run?"+url.Values{"id": {s.submission.String()}}.Encode(), resp.Header.Get("Location"))

		code, body := get(t, c, find("order-43"))
		require.Equal(t, http.StatusNotFound, code, body)
		require.Contains(t, body, "job orders has no submission with the key order-43")
		code, body = get(t, c, find(hostile))
		require.Equal(t, http.StatusBadRequest, code, body)
		require.Contains(t, body, "invalid submission name")
		requireEscaped(t, body)
	})

	t.Run("actions the CLI refuses", func(t *testing.T) {
		for _, q := range []url.Values{
			{"kind": {"replay-item"}, "run": {s.submission.String()}, "asset": {"order-0001"}},
			{"kind": {"cancel"}, "run": {s.submission.String()}},
			{"kind": {"replay-item"}, "run": {s.sweep.String()}, "asset": {"acct-0001"}},
			{"kind": {"cancel"}, "run": {s.sweep.String()}},
		} {
			code, body := get(t, c, base+"/confirm?"+q.Encode())
			require.Equal(t, http.StatusBadRequest, code, body)
			require.Contains(t, body, "refused: ", q.Encode())
		}
		code, body := get(t, c, base+"/confirm?"+url.Values{"kind": {"replay-tick"}, "job": {"sweep"}, "tick": {s.sweep.Nominal.Format("2006-01-02T15:04:05Z")}, "force": {"true"}}.Encode())
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, "its items are computed again")
	})
}

// attr is id as html/template writes it in an attribute.
func attr(id ledger.RunID) string { return strings.ReplaceAll(id.String(), "+", "&#43;") }

// requireEscaped checks that the hostile text of the fixtures shows as
// text.
func requireEscaped(t *testing.T, body string) {
	t.Helper()
	require.NotContains(t, body, "<script>window.__pwned")
	require.NotContains(t, body, "<img src=x")
}
