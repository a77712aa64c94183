// Command coordinator is baton's own coordinator Lambda function: the
// reference job fx, served with the public API (package batonlambda) as
// any user's bootstrap is.
package main

import (
	"github.com/batonhq/baton/batonlambda"
	"github.com/batonhq/baton/examples/fx"
)

func main() {
	batonlambda.StartCoordinator(fx.Catalog(nil))
}
