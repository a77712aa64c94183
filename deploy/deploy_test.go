// Package deploy_test checks the deployment files against the code: the
// Dockerfile's build line makes a static binary, and the Knative
// manifests use the server's real routes, flags and trigger shape. No
// container engine or cluster is needed.
package deploy_test

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/cronexpr"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/backend/postgresbackend"
	"github.com/batonhq/baton/internal/httpapp"
	"github.com/batonhq/baton/internal/lambdaevent"
	"github.com/batonhq/baton/internal/schedule"
)

// dockerfile is the parsed part of the Dockerfile the checks need.
type dockerfile struct {
	args       map[string]string // ARG defaults
	build      []string          // the RUN … go build line, split in words
	finalFrom  string
	user       string
	entrypoint string
}

func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	d := dockerfile{args: map[string]string{}}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		instr, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(instr) {
		case "ARG":
			name, def, _ := strings.Cut(rest, "=")
			d.args[name] = def
		case "FROM":
			d.finalFrom = strings.Fields(rest)[0]
		case "USER":
			d.user = rest
		case "ENTRYPOINT":
			d.entrypoint = rest
		case "RUN":
			if strings.Contains(rest, "go build") {
				require.Nil(t, d.build, "one go build line")
				d.build = shellWords(t, rest)
			}
		}
	}
	require.NotNil(t, d.build, "no RUN … go build line in %s", path)
	return d
}

// shellWords splits a simple shell command line: words separated by
// blanks, double quotes grouping (and removed).
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inQuote, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote, inWord = !inQuote, true
		case (r == ' ' || r == '\t') && !inQuote:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			require.NotContains(t, "&|;`\\", string(r), "the build line must be one plain command")
			cur.WriteRune(r)
			inWord = true
		}
	}
	require.False(t, inQuote, "unbalanced quotes in %q", s)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

var argRef = regexp.MustCompile(`\$\{?([A-Z_]+)\}?`)

// The image's binary, built with the Dockerfile's exact command, is
// static (no cgo, no interpreter, no shared library), and runs serve.
func TestDockerfileBuildsAStaticBinary(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	d := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	require.True(t, d.finalFrom == "scratch" || strings.HasPrefix(d.finalFrom, "gcr.io/distroless/static"), "final stage %s: want distroless static or scratch", d.finalFrom)
	require.NotEmpty(t, d.user)
	require.NotContains(t, []string{"root", "0", "0:0", "root:root"}, d.user, "the image runs as non-root")
	require.Contains(t, d.entrypoint, `"serve"`)

	// Environment assignments, then the go command; ARG references take
	// the Dockerfile's defaults; the output goes to a temporary file.
	env := os.Environ()
	var cmdArgs []string
	out := filepath.Join(t.TempDir(), "baton")
	for i, w := range d.build {
		w = argRef.ReplaceAllStringFunc(w, func(ref string) string {
			name := argRef.FindStringSubmatch(ref)[1]
			v, ok := d.args[name]
			require.True(t, ok, "the build line uses %s, which no ARG declares", ref)
			return v
		})
		if cmdArgs == nil && strings.Contains(w, "=") && !strings.HasPrefix(w, "-") {
			env = append(env, w)
			continue
		}
		if cmdArgs != nil && i > 0 && d.build[i-1] == "-o" {
			w = out
		}
		cmdArgs = append(cmdArgs, w)
	}
	require.Equal(t, []string{"go", "build"}, cmdArgs[:2])
	require.Contains(t, env, "CGO_ENABLED=0")
	cmd := exec.Command(goTool(t), cmdArgs[1:]...)
	cmd.Dir, cmd.Env = root, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "%v: %s", cmdArgs, stderr.String())

	f, err := elf.Open(out)
	require.NoError(t, err, "the image's binary is a Linux ELF executable")
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no interpreter")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs, "a static binary links no shared library")
	info, err := buildinfo.ReadFile(out)
	require.NoError(t, err)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	require.Equal(t, "0", settings["CGO_ENABLED"])
	require.Equal(t, "linux", settings["GOOS"])
	require.Equal(t, "true", settings["-trimpath"])
	require.Equal(t, "github.com/batonhq/baton/cmd/baton", info.Path)

	// Where the binary can run here, it serves; without caller
	// verification on the container's address it refuses to start.
	if settings["GOARCH"] != runtime.GOARCH || runtime.GOOS != "linux" {
		t.Logf("built for linux/%s; not run on %s/%s", settings["GOARCH"], runtime.GOOS, runtime.GOARCH)
		return
	}
	run := exec.Command(out, "serve", "--store", filepath.Join(t.TempDir(), "b.db"))
	run.Env = append(os.Environ(), "PORT=8080", "BATON_AUTH_SECRET=")
	var runErr bytes.Buffer
	run.Stderr = &runErr
	err = run.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "serve without verification on :8080 must refuse: %v", err)
	require.Equal(t, 2, exit.ExitCode())
	require.Contains(t, runErr.String(), "--addr :8080 is not loopback")
}

func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	require.NoError(t, err, "no go tool on PATH")
	return p
}

// yamlDocs decodes every document of a YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err, path)
		docs = append(docs, doc)
	}
}

// dig returns the value at path (map keys, or list indexes as ints).
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "at %q: not a mapping", k)
			v, ok = m[k]
			require.True(t, ok, "field %q missing", k)
		case int:
			l, ok := v.([]any)
			require.True(t, ok && k < len(l), "at [%d]: not a list that long", k)
			v = l[k]
		}
	}
	return v
}

func TestKnativeManifest(t *testing.T) {
	t.Parallel()
	docs := yamlDocs(t, "knative/service.yaml")
	require.Len(t, docs, 2)
	svc, ping := docs[0], docs[1]

	require.Equal(t, "serving.knative.dev/v1", svc["apiVersion"])
	require.Equal(t, "Service", svc["kind"])
	name := dig(t, svc, "metadata", "name").(string)
	require.Equal(t, "cluster-local", dig(t, svc, "metadata", "labels", "networking.knative.dev/visibility"))
	c := dig(t, svc, "spec", "template", "spec", "containers", 0)
	var args []string
	for _, a := range dig(t, c, "args").([]any) {
		args = append(args, a.(string))
	}
	flagValue := func(name string) string {
		i := slices.Index(args, name)
		require.True(t, i >= 0 && i+1 < len(args), "flag %s not in %v", name, args)
		return args[i+1]
	}
	require.Equal(t, "postgres", flagValue("--backend"))
	grace, err := time.ParseDuration(flagValue("--grace"))
	require.NoError(t, err)
	require.Less(t, grace, 10*time.Second, "within the 10s after SIGTERM")
	require.EqualValues(t, 8080, dig(t, c, "ports", 0, "containerPort"))
	require.Equal(t, httpapp.PathReady, dig(t, c, "readinessProbe", "httpGet", "path"))
	require.Equal(t, httpapp.PathHealth, dig(t, c, "livenessProbe", "httpGet", "path"))
	env := map[string]any{}
	for _, e := range dig(t, c, "env").([]any) {
		env[dig(t, e, "name").(string)] = dig(t, e, "valueFrom", "secretKeyRef")
	}
	require.Contains(t, env, postgresbackend.EnvDSN, "the connection string, in the variable --backend postgres reads")
	require.Contains(t, env, "BATON_AUTH_SECRET", "the secret comes from a Kubernetes secret")

	require.Equal(t, "sources.knative.dev/v1", ping["apiVersion"])
	require.Equal(t, "PingSource", ping["kind"])
	require.Equal(t, name, dig(t, ping, "spec", "sink", "ref", "name"))
	require.Equal(t, "Service", dig(t, ping, "spec", "sink", "ref", "kind"))
	require.Equal(t, "application/json", dig(t, ping, "spec", "contentType"))
	// The data is a trigger the coordinator takes for the fx job.
	tr, err := lambdaevent.DecodeTrigger(lambdaevent.TriggerParams{
		Payload: []byte(dig(t, ping, "spec", "data").(string)), Jobs: fx.Catalog(nil).Names(), Now: time.Now(), Skew: time.Minute,
	})
	require.NoError(t, err)
	require.Equal(t, fx.Name, tr.Job)
	// The PingSource fires at the job's ticks.
	cron, err := cronexpr.Parse(dig(t, ping, "spec", "schedule").(string)) // Kubernetes' five-field cron
	require.NoError(t, err)
	job, err := schedule.Parse(fx.Job(nil).Schedule)
	require.NoError(t, err)
	at := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	for range 5 {
		require.Equal(t, job.Next(at), cron.Next(at))
		at = job.Next(at)
	}
	// The secret's extension is the header serve reads it from.
	ext := dig(t, ping, "spec", "ceOverrides", "extensions").(map[string]any)
	require.Len(t, ext, 1)
	for k := range ext {
		require.Equal(t, "ce-"+k, strings.ToLower(flagValue("--auth-secret-header")))
	}
}
