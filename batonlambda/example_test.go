package batonlambda_test

import (
	"context"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/batonlambda"
)

// A bootstrap serving both functions: the template sets BATON_FUNCTION to
// coordinator on one and consumer on the other.
func ExampleStart() {
	catalog := baton.MustCatalog(baton.Job{
		Name: "hello", Schedule: "rate(1 minute)", Assets: []string{"en", "fr"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("hello"), nil }),
	})
	batonlambda.Start(catalog)
}

// A bootstrap per function.
func ExampleStartCoordinator() {
	catalog := baton.MustCatalog(baton.Job{
		Name: "hello", Schedule: "rate(1 minute)", Assets: []string{"en"},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return []byte("hello"), nil }),
	})
	batonlambda.StartCoordinator(catalog) // and batonlambda.StartConsumer(catalog) in the consumer's bootstrap
}
