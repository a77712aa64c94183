// Command baton is baton's own operator CLI and local runtime, serving the
// reference job fx with the public API (package batoncli) as any user's
// binary does. Run `baton help` for the commands.
//
// fx simulates its market-data provider's latency: 200ms per asset, or
// the Go duration in $FX_LATENCY.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/batonhq/baton/batoncli"
	"github.com/batonhq/baton/examples/fx"
)

func main() {
	latency := 200 * time.Millisecond
	if v := os.Getenv("FX_LATENCY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			fmt.Fprintf(os.Stderr, "baton: FX_LATENCY=%q: not a non-negative Go duration such as 200ms\n", v)
			os.Exit(batoncli.ExitUsage)
		}
		latency = d
	}
	batoncli.Main(fx.Catalog(&fx.Options{Latency: latency}))
}
