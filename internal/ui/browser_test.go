package ui_test

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/ledger"
)

var (
	screensDir = flag.String("ui.screens", filepath.Join("..", "..", "bin", "ui-screens"), "where the browser test saves its screenshots")
	readmeShot = flag.String("ui.readme", "", "also save the run timeline's screenshot here (make screenshots: docs/ui-timeline.png)")
)

// browserPath finds Chromium: $BATON_CHROMIUM, else chromium (Debian's
// package) or Chrome on PATH.
func browserPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BATON_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium on PATH for the browser test: install Debian's package (apt-get install -y chromium; `make test` does as root) or set BATON_CHROMIUM"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestBrowser opens every page of `baton ui` in headless Chromium on a
// store with complete, partial and in-flight runs: the timeline shows
// every item, hostile text stays text, a page in flight refreshes in
// place, and an action goes through its confirmation. Screenshots go to
// -ui.screens.
func TestBrowser(t *testing.T) {
	t.Parallel()
	chromium := browserPath(t)
	s := newStore(t)
	base := s.serve(t, "--refresh", "200ms")
	ls := newListStore(t)
	listBase := ls.serve(t)
	require.NoError(t, os.MkdirAll(*screensDir, 0o755))

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // as root in a container
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(t.Context()), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	var dialogs atomic.Int32
	// The first call starts the browser, which lives as long as bctx: the
	// test's deadline goes on a context derived after it.
	require.NoError(t, chromedp.Listen(bctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			t.Errorf("a page opened a %s dialog: %q", d.Type, d.Message)
		}
	}))
	ctx, cancel := context.WithTimeout(bctx, 55*time.Second)
	defer cancel()

	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			buf, err := chromedp.FullScreenshot(100)(ctx, t) // 100: PNG
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(*screensDir, name+".png"), buf, 0o644)
		})
	}
	count := func(sel string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
		require.NoError(t, err)
		return n
	}
	text := func(sel string) string {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err)
		return s
	}
	pwned := func() bool {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("window.__pwned !== undefined"))
		require.NoError(t, err)
		return v
	}
	runURL := func(id ledger.RunID, at ...string) string {
		return append(at, base)[0] + "/run?" + url.Values{"id": {id.String()}}.Encode()
	}

	// The jobs, then a job's runs and staleness.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#jobs")), shot("jobs"),
		chromedp.Click(chromedp.CSS(`#jobs a[href="/jobs/fx"]`)), chromedp.WaitVisible(chromedp.CSS("#runs")), shot("job"),
	))
	require.Equal(t, 3, count("#runs tbody tr"))
	require.Equal(t, 8, count("#staleness svg.spark"))
	require.Positive(t, count("#staleness rect.succeeded, #staleness rect.over"), "bars of successes")
	require.Positive(t, count("#staleness rect.missing"), "bars of runs without success")

	// Every item of every run is on its timeline, with its state.
	for _, tc := range []struct {
		name   string
		id     ledger.RunID
		states map[string]string
	}{
		{"run-complete", s.complete, map[string]string{"EURUSD": "SUCCEEDED", "DXY": "SUCCEEDED"}},
		{"run-partial", s.partial, map[string]string{"USDJPY": "DEAD", "DXY": "CANCELLED", "EURUSD": "SUCCEEDED"}},
		{"run-in-flight", s.inFlight, map[string]string{"EURUSD": "RUNNING", "GBPUSD": "SUCCEEDED", "XAUUSD": "PENDING"}},
	} {
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(runURL(tc.id)), chromedp.WaitVisible(chromedp.CSS("#timeline"))))
		require.Equal(t, 8, count("#timeline g.row"), tc.name)
		for asset, state := range tc.states {
			require.Equal(t, 1, count(fmt.Sprintf(`#timeline g.row[data-asset=%q][data-state=%q]`, asset, state)), "%s: %s %s", tc.name, asset, state)
		}
		if tc.id != s.inFlight {
			require.Equal(t, 8, count("#timeline g.row:has(rect.seg)"), "%s: every item has a bar", tc.name)
			require.NoError(t, chromedp.Do(ctx, shot(tc.name)))
		}
		if tc.id == s.complete && *readmeShot != "" {
			buf, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#main")))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(*readmeShot, buf, 0o644))
		}
	}
	// In flight: the page refreshes in place when the item ends.
	require.NoError(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[int]("window.__marker = 42")(ctx, t)
		return err
	})))
	require.NoError(t, chromedp.Do(ctx, shot("run-in-flight")))
	_, err := s.b.Ledger.Complete(t.Context(), ledger.CompleteParams{Key: s.running.Key, Owner: s.running.Owner, Attempt: s.running.Attempt, Result: []byte("{}"), Now: time.Now()})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.querySelector('#timeline g.row[data-asset="EURUSD"]').dataset.state === "SUCCEEDED" && window.__marker === 42`, chromedp.WithPollingTimeout(10*time.Second))))

	// The partial run: the hostile error is shown as text and runs nothing.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(runURL(s.partial)), chromedp.WaitVisible(chromedp.CSS("#items"))))
	require.Contains(t, text(`#items tr[data-asset="USDJPY"] td.error`), "<script>window.__pwned=1</script>")
	require.False(t, pwned())

	// Dead letters: the reason and the redrive prediction.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/dlq"), chromedp.WaitVisible(chromedp.CSS("#dead-letters")), shot("dlq")))
	require.Equal(t, 2, count("#dead-letters tbody tr"))
	require.Contains(t, text("#dead-letters"), "rejected again (malformed)")
	require.False(t, pwned())

	// A guarded action: release the expired lease through its confirmation.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/jobs/fx/lease"), chromedp.WaitVisible(chromedp.CSS("#lease-state")), shot("lease"),
		chromedp.Click(chromedp.CSS(`a[data-action="release-lease"]`)), chromedp.WaitVisible(chromedp.CSS("#plan")), shot("confirm"),
	))
	require.Contains(t, text("#plan"), "takes it over as fence 5")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#outcome")), shot("outcome"),
	))
	require.Equal(t, "Done.", strings.TrimSpace(text("#outcome")))
	require.Contains(t, text("pre.output"), "released the expired lease of fx")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#back")), chromedp.WaitVisible(chromedp.CSS("#lease-state"))))
	require.Equal(t, "free", text("#lease-state"))

	// Submissions and run-time lists: the submission is on the jobs page,
	// from which its run's timeline shows its stored items; a paused job
	// says why, as text.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(listBase+"/"), chromedp.WaitVisible(chromedp.CSS("#jobs")), shot("jobs-submissions"),
	))
	require.Equal(t, "order-42", text(`#jobs tr[data-job="orders"] ul.subs a`))
	require.Contains(t, text(`#jobs tr[data-job="sweep"] .paused-note`), "by ops: migration <script>window.__pwned=1</script>")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#jobs tr[data-job="orders"] ul.subs a`)), chromedp.WaitVisible(chromedp.CSS("#timeline")), shot("run-submission"),
	))
	require.Equal(t, submissionItems, count("#timeline g.row"))
	require.Equal(t, submissionItems, count("#timeline g.row:has(rect.seg)"), "every submitted item has a bar")
	require.Equal(t, 1, count(fmt.Sprintf(`#timeline g.row[data-asset=%q][data-state="DEAD"]`, deadOrder)))
	require.Contains(t, text(fmt.Sprintf(`#items tr[data-asset=%q] td.error`, deadOrder)), "rejected <script>window.__pwned=1</script>")
	require.Zero(t, count(`a[data-action="replay-item"], a[data-action="cancel"]`), "the CLI refuses these on a submission")
	require.Contains(t, text("#refusals"), "A submission has no tick to replay")
	// The run-time list: four pages of its 300 items, then the rest.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(runURL(ls.sweep, listBase)), chromedp.WaitVisible(chromedp.CSS("#timeline")), shot("run-time-list"),
	))
	require.Equal(t, 4*ledger.PageItems, count("#timeline g.row"))
	require.Contains(t, text("#window"), "Items 1–256 of the run's stored list")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#window-next")), chromedp.WaitVisible(chromedp.CSS("#window-prev"))))
	require.Equal(t, sweepItems-4*ledger.PageItems, count("#timeline g.row"))
	require.False(t, pwned())
	require.Zero(t, dialogs.Load())

	for _, name := range []string{"jobs", "job", "run-complete", "run-partial", "run-in-flight", "dlq", "lease", "confirm", "outcome", "jobs-submissions", "run-submission", "run-time-list"} {
		b, err := os.ReadFile(filepath.Join(*screensDir, name+".png"))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(b), "\x89PNG\r\n\x1a\n"), "%s is not a PNG", name)
		require.Greater(t, len(b), 1000, name)
	}
}
