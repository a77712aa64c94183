package fx

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"
)

// level is an asset's typical price and the decimals it is quoted with.
type level struct {
	price    float64
	decimals int
}

// levels are plausible prices for the catalog's assets.
var levels = map[string]level{
	"EURUSD": {1.08, 5},
	"GBPUSD": {1.27, 5},
	"USDJPY": {150, 3},
	"USDCAD": {1.36, 5},
	"USDSEK": {10.5, 4},
	"USDCHF": {0.88, 5},
	"XAUUSD": {2000, 2},
}

// BarMinute is the minute a tick ingests: the latest complete minute
// before the tick's nominal time (the 12:01:00 tick ingests 12:00:00–12:00:59).
func BarMinute(nominal time.Time) time.Time {
	return nominal.UTC().Truncate(time.Minute).Add(-time.Minute)
}

// Synthesize returns the bar of asset for minute. It depends on nothing but
// (asset, minute): every call, attempt and replay yields the same prices.
// Prices drift slowly over the day around the asset's typical level, with
// a little noise per minute.
func Synthesize(asset string, minute time.Time) (Bar, error) {
	lv, ok := levels[asset]
	if !ok {
		return Bar{}, fmt.Errorf("synthesize %s: no price level for this asset", asset)
	}
	minute = minute.UTC().Truncate(time.Minute)
	h := fnv.New64a()
	fmt.Fprintf(h, "%s@%s", asset, minute.Format(time.RFC3339))
	seed := h.Sum64()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	// A daily swing of ±1% (phase per asset) plus ±0.05% noise per minute.
	dayFrac := float64(minute.Unix()%86400) / 86400
	phase := float64(seed%360) * math.Pi / 180
	mid := lv.price * (1 + 0.01*math.Sin(2*math.Pi*dayFrac+phase) + 0.0005*(2*r.Float64()-1))
	open := mid * (1 + 0.0003*(2*r.Float64()-1))
	cls := mid * (1 + 0.0003*(2*r.Float64()-1))
	high := math.Max(open, cls) * (1 + 0.0002*r.Float64())
	low := math.Min(open, cls) * (1 - 0.0002*r.Float64())

	b := Bar{
		Asset:  asset,
		Minute: minute,
		Open:   round(open, lv.decimals),
		Close:  round(cls, lv.decimals),
		High:   round(high, lv.decimals),
		Low:    round(low, lv.decimals),
	}
	// Rounding must not break Low <= Open, Close <= High.
	b.High = math.Max(b.High, math.Max(b.Open, b.Close))
	b.Low = math.Min(b.Low, math.Min(b.Open, b.Close))
	return b, nil
}

func round(x float64, decimals int) float64 {
	p := math.Pow10(decimals)
	return math.Round(x*p) / p
}
