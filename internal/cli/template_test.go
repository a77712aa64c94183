package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// bareCommand is a mention of a baton command in prose: 'baton dlq list'.
var bareCommand = regexp.MustCompile(`\bbaton ([a-z]+)(?: ([a-z]+))?`)

// TestTemplateNamesRealCommands: the operator commands the template's
// descriptions (alarms) point to exist, verb included.
func TestTemplateNamesRealCommands(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "template.yaml"))
	require.NoError(t, err)
	groups := []string{"dlq", "lease", "replay"} // commands that take a verb
	var names []string
	for _, c := range commands() {
		names = append(names, c.name())
	}
	found := bareCommand.FindAllStringSubmatch(string(raw), -1)
	require.NotEmpty(t, found)
	for _, m := range found {
		require.Contains(t, names, m[1], "template.yaml: %q", m[0])
		if !slices.Contains(groups, m[1]) {
			continue
		}
		code, _, errOut := runMain(t, m[1], m[2], "--help")
		require.Equal(t, ExitOK, code, "template.yaml: %q: %s", m[0], errOut)
	}
}
