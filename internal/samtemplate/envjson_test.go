package samtemplate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lambdaapp"
)

// TestEnvJSONExample: env.json.example, the --env-vars file of 'sam local
// invoke', names every function of the template by its logical id and
// gives each every variable its code reads (and no other), so that SAM
// never substitutes a literal logical id for a !Ref.
func TestEnvJSONExample(t *testing.T) {
	t.Parallel()
	b := setup(t)
	raw, err := os.ReadFile(filepath.Join(b.root, "env.json.example"))
	require.NoError(t, err)
	var example map[string]map[string]string
	require.NoError(t, json.Unmarshal(raw, &example))

	var fns []string
	for id, r := range at(t, b.tpl, "Resources").(map[string]any) {
		if at(t, r, "Type") == "AWS::Serverless::Function" {
			fns = append(fns, id)
		}
	}
	slices.Sort(fns)
	var named []string
	for id := range example {
		named = append(named, id)
	}
	slices.Sort(named)
	require.Equal(t, fns, named, "env.json.example names every function's logical id")

	for id, vars := range example {
		f, ok := functions[id]
		require.True(t, ok, "%s: which function is it?", id)
		var read []string
		for _, v := range lambdaapp.Variables(f) {
			read = append(read, v.Name)
			_, given := vars[v.Name]
			require.True(t, given, "%s: %s (%s)", id, v.Name, v.Usage)
			if v.Required {
				require.NotEmpty(t, vars[v.Name], "%s: %s (%s)", id, v.Name, v.Usage)
			}
		}
		for k := range vars {
			require.Contains(t, read, k, "%s: %s is not read by the function", id, k)
		}
		// The values are what the function accepts.
		_, err := lambdaapp.LoadConfig(f, func(k string) string { return vars[k] })
		require.NoError(t, err, id)
		// Every !Ref of the template's environment is given a real value,
		// not the literal logical id SAM would pass.
		for k, v := range b.env(t, id) {
			if ref, _, isRef := refTo(v); isRef && !strings.HasPrefix(ref, "AWS::") {
				require.NotEqual(t, ref, vars[k], "%s: %s", id, k)
			}
		}
	}
}

// TestEventsReadmeSteps: the 'sam local invoke' steps of events/README.md
// name functions of the template and fixtures that exist, and pass
// --env-vars env.json, the copy of env.json.example.
func TestEventsReadmeSteps(t *testing.T) {
	t.Parallel()
	b := setup(t)
	raw, err := os.ReadFile(filepath.Join(b.root, "events", "README.md"))
	require.NoError(t, err)
	steps := regexp.MustCompile(`(?m)^sam local invoke (\S+) -e (\S+)(.*)$`).FindAllStringSubmatch(string(raw), -1)
	require.NotEmpty(t, steps)
	for _, s := range steps {
		_, ok := functions[s[1]]
		require.True(t, ok, "%q: no such function", s[0])
		_, err := os.Stat(filepath.Join(b.root, s[2]))
		require.NoError(t, err, s[0])
		require.Contains(t, s[3], "--env-vars env.json", s[0])
	}
	require.Contains(t, string(raw), "cp env.json.example env.json")
}
