// Command consumer is baton's own consumer Lambda function: the reference
// job fx, served with the public API (package batonlambda) as any user's
// bootstrap is.
package main

import (
	"github.com/batonhq/baton/batonlambda"
	"github.com/batonhq/baton/examples/fx"
)

func main() {
	batonlambda.StartConsumer(fx.Catalog(nil))
}
