package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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

	// Nobody consumes: --wait ends unfinished, exit status 1.
	code, out, _ = runMain(t, "submit", "--store", store, "--key", "req-2", "--items", items, "--wait", "150ms", "--json")
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
	} {
		code, out, errOut := runMain(t, append([]string{"submit", "--store", store}, tc.args...)...)
		require.Equal(t, ExitUsage, code, "%v: %s", tc.args, out)
		require.Contains(t, errOut, tc.want, tc.args)
		require.NotContains(t, errOut+out, "secret")
	}
}
