package ui_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/cli"
	"github.com/batonhq/baton/internal/ledger"
)

func get(t *testing.T, c *http.Client, u string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, c *http.Client, u string, form url.Values, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func withJar(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := noRedirect()
	c.Jar = jar
	return c
}

var tokenField = regexp.MustCompile(`name="token" value="([0-9a-f]{64})"`)

func runURL(base, id string) string { return base + "/run?" + url.Values{"id": {id}}.Encode() }

func TestPagesOverHTTP(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	base := s.serve(t)
	c := withJar(t)

	code, body := get(t, c, base+"/")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `data-job="fx"`)
	require.Contains(t, body, "rate(1 minute)")

	code, body = get(t, c, base+"/jobs/fx")
	require.Equal(t, http.StatusOK, code, body)
	for _, id := range []string{s.complete.String(), s.partial.String(), s.inFlight.String()} {
		require.Contains(t, body, `data-run="`+id+`"`)
	}
	require.Contains(t, body, `data-live="true"`, "a job with a run in flight refreshes")
	require.Equal(t, 8, strings.Count(body, `<tr data-asset=`), "a staleness row per item")

	t.Run("timeline", func(t *testing.T) {
		for _, tc := range []struct {
			id     string
			states map[string]string
			live   bool
		}{
			{s.complete.String(), map[string]string{"EURUSD": "SUCCEEDED", "DXY": "SUCCEEDED"}, false},
			{s.partial.String(), map[string]string{"USDJPY": "DEAD", "DXY": "CANCELLED", "EURUSD": "SUCCEEDED"}, false},
			{s.inFlight.String(), map[string]string{"EURUSD": "RUNNING", "GBPUSD": "SUCCEEDED", "USDJPY": "PENDING", "DXY": "PENDING"}, true},
		} {
			code, body := get(t, c, runURL(base, tc.id))
			require.Equal(t, http.StatusOK, code, body)
			require.Equal(t, 8, strings.Count(body, `<g class="row"`), "one bar row per item of %s", tc.id)
			for asset, state := range tc.states {
				require.Contains(t, body, `<g class="row" data-asset="`+asset+`" data-state="`+state+`"`, tc.id)
			}
			require.Equal(t, tc.live, strings.Contains(body, `data-live="true"`), tc.id)
		}
		// The retried item is marked with its attempts, the derived item
		// comes after its inputs.
		_, body := get(t, c, runURL(base, s.complete.String()))
		require.Contains(t, body, `data-asset="EURUSD" data-state="SUCCEEDED" data-attempts="2"`)
		require.Contains(t, body, `class="seg retried"`)
		require.Greater(t, strings.Index(body, `data-asset="DXY"`), strings.Index(body, `data-asset="XAUUSD"`))
	})

	t.Run("partial refresh", func(t *testing.T) {
		code, body := get(t, c, runURL(base, s.inFlight.String()), "X-Baton-Partial", "1")
		require.Equal(t, http.StatusOK, code)
		require.True(t, strings.HasPrefix(body, `<main id="main" data-live="true"`), body[:min(len(body), 200)])
		require.NotContains(t, body, "<html")
	})

	t.Run("escaping", func(t *testing.T) {
		for _, u := range []string{runURL(base, s.partial.String()), base + "/dlq", base + "/confirm?kind=redrive"} {
			code, body := get(t, c, u)
			require.Equal(t, http.StatusOK, code, body)
			require.NotContains(t, body, "<script>window.__pwned", u)
			require.NotContains(t, body, "<img src=x", u)
			require.Contains(t, body, "&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x onerror=&#34;window.__pwned=2&#34;&gt;&#34;&#39;&amp;", u)
		}
		code, body := get(t, c, base+"/dlq")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "rejected again (malformed)")
		require.Contains(t, body, "acknowledged, not re-run")
		// A hostile query is quoted back escaped too.
		code, body = get(t, c, base+"/confirm?kind=%3Cscript%3Ex")
		require.Equal(t, http.StatusBadRequest, code)
		require.NotContains(t, body, "<script>x")
		code, body = get(t, c, base+"/run?id=fx@2026-01-01T00:00:00Z%231/%3Cb%3E")
		require.Equal(t, http.StatusBadRequest, code)
		require.NotContains(t, body, "<b>")
	})

	t.Run("security headers", func(t *testing.T) {
		resp, err := c.Get(base + "/")
		require.NoError(t, err)
		resp.Body.Close()
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
	})

	t.Run("loopback host only", func(t *testing.T) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/", nil)
		require.NoError(t, err)
		req.Host = "evil.example:80" // DNS rebinding: a page of evil.example resolved to 127.0.0.1
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
	})
}

// TestActionGuards drives the release of the expired lease: refused
// without the session's token, with another session's, cross-origin and
// in read-only mode; done after a confirmation that says what happens.
func TestActionGuards(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	base := s.serve(t)
	ro := s.serve(t, "--read-only")
	c := withJar(t)
	leaseOwner := func() string {
		l, err := s.b.Leases.Inspect(t.Context(), fx.Name)
		require.NoError(t, err)
		return l.Owner
	}
	form := url.Values{"kind": {"release-lease"}, "job": {fx.Name}, "owner": {"coordinator-7f3a"}, "fence": {"4"}}

	code, body := get(t, c, base+"/jobs/fx/lease")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `id="lease-state">expired`)
	require.Contains(t, body, "coordinator-7f3a")
	require.Contains(t, body, "/confirm?fence=4&amp;job=fx&amp;kind=release-lease&amp;owner=coordinator-7f3a")

	code, body = get(t, c, base+"/confirm?"+form.Encode())
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "takes it over as fence 5")
	m := tokenField.FindStringSubmatch(body)
	require.NotNil(t, m, body)
	token := m[1]
	require.Equal(t, "coordinator-7f3a", leaseOwner(), "a confirmation page changes nothing")

	refused := []struct {
		name   string
		client *http.Client
		url    string
		token  string
		header []string
		status int
	}{
		{"no token", c, base, "", nil, http.StatusForbidden},
		{"wrong token", c, base, strings.Repeat("0", 64), nil, http.StatusForbidden},
		{"another session's token", withJar(t), base, token, nil, http.StatusForbidden},
		{"cross-site", c, base, token, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"foreign origin", c, base, token, []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"read-only", c, ro, token, nil, http.StatusForbidden},
	}
	for _, tc := range refused {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		if tc.token != "" {
			f.Set("token", tc.token)
		}
		code, body := post(t, tc.client, tc.url+"/act", f, tc.header...)
		require.Equal(t, tc.status, code, "%s: %s", tc.name, body)
		require.Equal(t, "coordinator-7f3a", leaseOwner(), "%s: the lease was released", tc.name)
	}

	// Read-only shows no action at all.
	_, body = get(t, c, ro+"/jobs/fx/lease")
	require.NotContains(t, body, "/confirm?")
	_, body = get(t, c, ro+"/run?"+url.Values{"id": {s.inFlight.String()}}.Encode())
	require.NotContains(t, body, "/confirm?")
	require.Contains(t, body, `id="read-only"`)

	// Unknown fields and bad values are refused before anything runs.
	f := url.Values{"token": {token}, "kind": {"release-lease"}, "job": {fx.Name}, "owner": {"x"}, "fence": {"4"}, "force-live": {"true"}}
	code, body = post(t, c, base+"/act", f)
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "release-lease takes no field")

	f = url.Values{"token": {token}}
	for k, v := range form {
		f[k] = v
	}
	code, body = post(t, c, base+"/act", f, "Origin", base, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "released the expired lease of fx")
	require.Empty(t, leaseOwner())

	// The same confirmation again: the CLI's guard answers.
	code, body = post(t, c, base+"/act", f)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "already free")
}

// TestCancelFromTheDashboard cancels the in-flight run after a
// confirmation that lists what becomes CANCELLED; the run settles.
func TestCancelFromTheDashboard(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	base := s.serve(t)
	c := withJar(t)
	q := url.Values{"kind": {"cancel"}, "run": {s.inFlight.String()}}
	code, body := get(t, c, base+"/confirm?"+q.Encode())
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "EURUSD (RUNNING)")
	require.Contains(t, body, "Left as they are (terminal): GBPUSD (SUCCEEDED)")
	token := tokenField.FindStringSubmatch(body)[1]
	q.Set("token", token)
	code, body = post(t, c, base+"/act", q)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "7 cancelled, 1 already terminal")
	run, err := s.b.Ledger.GetRun(t.Context(), fx.Name, s.inFlight.Nominal)
	require.NoError(t, err)
	require.Equal(t, "partial", string(run.State))
}

// TestListenGuards: off loopback needs --allow-remote and a token; a
// token, once set, is required of every request.
func TestListenGuards(t *testing.T) {
	s := newStore(t)
	run := func(args ...string) (int, string) {
		var out, errOut strings.Builder
		code := cli.Main(t.Context(), s.catalog, append([]string{"ui", "--store", s.path}, args...), &out, &errOut)
		return code, errOut.String()
	}
	code, msg := run("--listen", "0.0.0.0:0")
	require.Equal(t, cli.ExitUsage, code)
	require.Contains(t, msg, "needs --allow-remote and an access token in $BATON_UI_TOKEN")
	code, _ = run("--listen", ":0", "--allow-remote")
	require.Equal(t, cli.ExitUsage, code)

	t.Setenv("BATON_UI_TOKEN", "short")
	code, msg = run("--listen", "127.0.0.1:0")
	require.Equal(t, cli.ExitUsage, code)
	require.Contains(t, msg, "too short")

	token := "s3cret-token-0123456789"
	t.Setenv("BATON_UI_TOKEN", token)
	var help strings.Builder
	cli.Main(t.Context(), s.catalog, []string{"ui", "--help"}, &help, &help)
	require.NotContains(t, help.String(), token, "--help never prints the token")

	base := s.serve(t)
	c := withJar(t)
	code, body := get(t, c, base+"/")
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, _ = get(t, c, base+"/?token=wrong")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = get(t, c, base+"/jobs/fx", "Authorization", "Bearer "+token)
	require.Equal(t, http.StatusOK, code)
	resp, err := c.Get(base + "/jobs/fx?token=" + token)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/jobs/fx", resp.Header.Get("Location"), "the token leaves the address")
	code, _ = get(t, c, base+"/jobs/fx")
	require.Equal(t, http.StatusOK, code, "the cookie carries the token")
}

// TestReplayItemFromTheDashboard re-runs an item of a finished run: the
// confirmation says a new generation opens and which derived items run
// again; the command runs it to the end with consumers in process.
func TestReplayItemFromTheDashboard(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	base := s.serve(t)
	c := withJar(t)
	q := url.Values{"kind": {"replay-item"}, "run": {s.complete.String()}, "asset": {"EURUSD"}}
	code, body := get(t, c, base+"/confirm?"+q.Encode())
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "Nothing to do", "a SUCCEEDED item is not re-run without force")
	q.Set("force", "true")
	code, body = get(t, c, base+"/confirm?"+q.Encode())
	require.Equal(t, http.StatusOK, code, body)
	next := s.complete
	next.Generation++
	require.Contains(t, body, "opens generation 2 ("+next.String()+")")
	require.Contains(t, body, "Derived items that take it as input run again too: DXY.")
	q.Set("token", tokenField.FindStringSubmatch(body)[1])
	code, body = post(t, c, base+"/act", q)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "opened "+next.String())
	items, err := s.b.Ledger.ListItems(t.Context(), next)
	require.NoError(t, err)
	byAsset := map[string]ledger.Item{}
	for _, it := range items {
		byAsset[it.Key.Asset] = it
	}
	require.Equal(t, ledger.ItemSucceeded, byAsset["EURUSD"].State)
	require.Equal(t, 2, byAsset["EURUSD"].Attempt, "its first attempt fails again, then it succeeds")
	require.Equal(t, ledger.ItemSucceeded, byAsset["DXY"].State)

	code, body = get(t, c, runURL(base, next.String()))
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 8, strings.Count(body, `<g class="row"`))
	code, body = get(t, c, runURL(base, s.complete.String()))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `id="run-state">superseded`)
	require.NotContains(t, body, "/confirm?", "no action on a superseded generation")
}
