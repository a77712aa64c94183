package batoncli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batoncli"
)

// Run serves a catalog's commands in-process: here one tick of a job of
// two assets, end to end on a fresh embedded store.
func ExampleRun() {
	catalog := baton.MustCatalog(baton.Job{
		Name:     "hello",
		Schedule: "rate(1 minute)",
		Assets:   []string{"en", "fr"},
		Processor: baton.ProcessorFunc(func(ctx context.Context, t baton.Task) ([]byte, error) {
			return []byte(map[string]string{"en": "hello", "fr": "bonjour"}[t.Asset]), nil
		}),
	})
	dir, _ := os.MkdirTemp("", "baton-example")
	defer os.RemoveAll(dir)
	store := filepath.Join(dir, "baton.db")

	var out, errOut bytes.Buffer
	code := batoncli.Run(context.Background(), catalog, []string{"run", "--once", "--store", store}, &out, &errOut)
	fmt.Println("exit status", code)
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) == 7 && f[0] != "job" { // an item's row: ITEM STATUS … RESULT
			fmt.Println(f[0], f[1], f[6])
		}
	}
	// Output:
	// exit status 0
	// en SUCCEEDED hello
	// fr SUCCEEDED bonjour
}

// A user's binary: the whole CLI for the user's catalog.
func ExampleMain() {
	catalog := baton.MustCatalog(baton.Job{
		Name: "hello", Schedule: "rate(1 minute)", Assets: []string{"en"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("hello"), nil }),
	})
	batoncli.Main(catalog) // runs os.Args and exits
}

// The command tree can be extended with commands of the user's own.
func ExampleNewRootCommand() {
	catalog := baton.MustCatalog(baton.Job{
		Name: "hello", Schedule: "rate(1 minute)", Assets: []string{"en"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("hello"), nil }),
	})
	root := batoncli.NewRootCommand(catalog)
	var names []string
	for _, c := range root.Commands() {
		names = append(names, c.Name())
	}
	fmt.Println(strings.Join(names, " "))
	// Output: cancel completion dlq help invoke lease lock pause replay resume run serve setup status submit template ui version
}
