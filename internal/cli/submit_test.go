package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/sqlite"
)

func TestSubmit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "baton.db")
	items := filepath.Join(dir, "items.json")
	require.NoError(t, os.WriteFile(items, []byte(`[{"name":"EURUSD","payload":{"depth":5}},{"name":"GBPUSD","payload_base64":"AAE="}]`), 0o600))

	code, out, errOut := runMain(t, "submit", "--store", store, "--key", "req-1", "--items", items, "--json")
	require.Equal(t, ExitOK, code, errOut)
	var rep struct {
		Run      string `json:"run"`
		Items    int    `json:"items"`
		Existing bool   `json:"existing"`
		Enqueued int    `json:"enqueued"`
		State    string `json:"run_state"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, "fx+req-1#1", rep.Run)
	require.Equal(t, 2, rep.Items)
	require.Equal(t, 2, rep.Enqueued)
	require.False(t, rep.Existing)

	code, out, errOut = runMain(t, "submit", "--store", store, "--key", "req-1", "--items", items)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "deduped: the key's run is fx+req-1#1, 0 messages enqueued\n", out)

	// The same key with another payload: deduped, and it says the new items were not used.
	changed := filepath.Join(dir, "changed.json")
	require.NoError(t, os.WriteFile(changed, []byte(`[{"name":"EURUSD","payload":{"depth":6}},{"name":"GBPUSD","payload_base64":"AAE="}]`), 0o600))
	code, out, errOut = runMain(t, "submit", "--store", store, "--key", "req-1", "--items", changed)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "deduped: the key's run is fx+req-1#1, 0 messages enqueued\n"+
		"note: these items differ from those the key's run was opened with; they were not used (submit them under a new key)\n", out)
	code, out, errOut = runMain(t, "submit", "--store", store, "--key", "req-1", "--items", changed, "--json")
	require.Equal(t, ExitOK, code, errOut)
	var differs struct {
		Existing       bool `json:"existing"`
		PayloadDiffers bool `json:"payload_differs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &differs), out)
	require.True(t, differs.Existing)
	require.True(t, differs.PayloadDiffers)
	code, out, errOut = runMain(t, "submit", "--store", store, "--key", "req-1", "--items", items, "--json")
	require.Equal(t, ExitOK, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &differs), out)
	require.False(t, differs.PayloadDiffers, "the same items")

	// Nobody consumes (--consumers 0): --wait ends unfinished, exit status 1.
	code, out, _ = runMain(t, "submit", "--store", store, "--key", "req-2", "--items", items, "--wait", "150ms", "--consumers", "0", "--json")
	require.Equal(t, ExitFailure, code, out)
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, "fanned_out", rep.State)
	code, out, _ = runMain(t, "submit", "--store", store, "--key", "req-1", "--items", items, "--json")
	require.Equal(t, ExitOK, code, out)
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.True(t, rep.Existing, "the dedupe key found its run")
	require.Zero(t, rep.Enqueued)

	// The run reads back by its id.
	code, out, errOut = runMain(t, "status", "--store", store, "--run", "fx+req-1#1", "--json")
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, `fx+req-1#1`)

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`[{"name":"EURUSD","payload":"secret"},{"name":"a b"}]`), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--key", "k", "--items", bad}, `item 1: invalid item name "a b"`},
		{[]string{"--key", "a key", "--items", items}, `dedupe key: invalid submission name "a key"`},
		{[]string{"--items", items}, "--key is required"},
		{[]string{"--key", "k"}, "--items is required"},
		{[]string{"--key", "k", "--items", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"--key", "k", "--items", items, "--class", "vip"}, `class "vip" is not a job queue of the catalog`},
	} {
		code, out, errOut := runMain(t, append([]string{"submit", "--store", store}, tc.args...)...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, out)
		require.Contains(t, errOut, tc.want, tc.args)
		require.NotContains(t, errOut+out, "secret")
	}
}

func TestReplaySubmission(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "baton.db")
	items := filepath.Join(dir, "items.json")
	require.NoError(t, os.WriteFile(items, []byte(`[{"name":"EURUSD","payload":{"depth":5}},{"name":"GBPUSD"}]`), 0o600))
	code, out, errOut := runMain(t, "submit", "--store", store, "--key", "req-1", "--items", items)
	require.Equal(t, ExitOK, code, errOut+out)

	// Still in flight (nobody consumed it): refused.
	code, out, errOut = runMain(t, "replay", "submission", "--store", store, "--key", "req-1")
	require.Equal(t, ExitFailure, code, out)
	require.Contains(t, errOut, "refused")
	require.Contains(t, errOut, "fx+req-1#1 is fanned_out")

	code, out, errOut = runMain(t, "cancel", "--store", store, "--run", "fx+req-1#1")
	require.Equal(t, ExitOK, code, errOut+out)

	code, out, errOut = runMain(t, "replay", "submission", "--store", store, "--key", "req-1", "--json")
	require.Equal(t, ExitOK, code, errOut+out)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &raw), out)
	require.Equal(t, "fx+req-1#2", raw["run"])
	require.Equal(t, "fx+req-1#1", raw["previous"])
	require.EqualValues(t, 2, raw["enqueued"])
	require.Equal(t, "complete", raw["run_state"])
	require.EqualValues(t, 2, raw["succeeded"])

	// status lists the job's submissions, each by its current generation.
	code, _, errOut = runMain(t, "submit", "--store", store, "--key", "req-2", "--items", items)
	require.Equal(t, ExitOK, code, errOut)
	code, out, errOut = runMain(t, "status", "--store", store, "--json")
	require.Equal(t, ExitOK, code, errOut)
	var st struct {
		Submissions []struct {
			ID, Key, State string
			Succeeded      int
		} `json:"submissions"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Len(t, st.Submissions, 2, out)
	require.Equal(t, "fx+req-2#1", st.Submissions[0].ID)
	require.Equal(t, "fanned_out", st.Submissions[0].State)
	require.Equal(t, "fx+req-1#2", st.Submissions[1].ID)
	require.Equal(t, "req-1", st.Submissions[1].Key)
	require.Equal(t, 2, st.Submissions[1].Succeeded)
	code, out, errOut = runMain(t, "status", "--store", store)
	require.Equal(t, ExitOK, code, errOut)
	require.Contains(t, out, "recent submissions")
	require.Contains(t, out, "fx+req-1#2  complete")

	// The key finds the new generation.
	code, out, errOut = runMain(t, "submit", "--store", store, "--key", "req-1", "--items", items)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "deduped: the key's run is fx+req-1#2, 0 messages enqueued\n", out)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--key is required"},
		{[]string{"--key", "nope"}, `has no submission "nope"`},
		{[]string{"--key", "a b"}, "invalid submission name"},
	} {
		code, out, errOut := runMain(t, append([]string{"replay", "submission", "--store", store}, tc.args...)...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, out)
		require.Contains(t, errOut, tc.want, tc.args)
	}
}

// A run opened by a version that kept no digest of its items (the
// SQLite store before migration 016_run_digest) is answered as before:
// deduped, with no note, its items not compared (payload_differs false).
func TestSubmitDedupedByARunOpenedWithoutADigest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "baton.db")
	items := filepath.Join(dir, "items.json")
	require.NoError(t, os.WriteFile(items, []byte(`[{"name":"EURUSD","payload":{"depth":5}}]`), 0o600))
	code, _, errOut := runMain(t, "submit", "--store", store, "--key", "old", "--items", items, "--consumers", "0")
	require.Equal(t, ExitOK, code, errOut)

	// Back to the schema before the digest, as an earlier version left it:
	// the next command migrates the store again, the run without one.
	db, err := sqlite.Open(t.Context(), store, nil)
	require.NoError(t, err)
	_, err = db.SQL().ExecContext(t.Context(), `ALTER TABLE runs DROP COLUMN digest`)
	require.NoError(t, err)
	_, err = db.SQL().ExecContext(t.Context(), `DELETE FROM schema_migrations WHERE name LIKE '%016_run_digest.sql'`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	changed := filepath.Join(dir, "changed.json")
	require.NoError(t, os.WriteFile(changed, []byte(`[{"name":"EURUSD","payload":{"depth":6}}]`), 0o600))
	code, out, errOut := runMain(t, "submit", "--store", store, "--key", "old", "--items", changed)
	require.Equal(t, ExitOK, code, errOut)
	require.Equal(t, "deduped: the key's run is fx+old#1, 0 messages enqueued\n", out, "not known: no note")
	code, out, errOut = runMain(t, "submit", "--store", store, "--key", "old", "--items", changed, "--json")
	require.Equal(t, ExitOK, code, errOut)
	var rep struct {
		Existing       bool `json:"existing"`
		PayloadDiffers bool `json:"payload_differs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.True(t, rep.Existing)
	require.False(t, rep.PayloadDiffers, "a run without a digest is not compared")

	// A key submitted after the migration keeps its digest again.
	code, _, errOut = runMain(t, "submit", "--store", store, "--key", "new", "--items", items, "--consumers", "0")
	require.Equal(t, ExitOK, code, errOut)
	code, out, errOut = runMain(t, "submit", "--store", store, "--key", "new", "--items", changed, "--json")
	require.Equal(t, ExitOK, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.True(t, rep.PayloadDiffers, out)
}
