package fx

import (
	"encoding/json"
	"fmt"
	"math"
)

// dxyWeights are the exponents of the ICE US dollar index formula, by pair.
var dxyWeights = map[string]float64{
	"EURUSD": -0.576,
	"USDJPY": 0.136,
	"GBPUSD": -0.119,
	"USDCAD": 0.091,
	"USDSEK": 0.042,
	"USDCHF": 0.036,
}

// dxyConstant is the index formula's constant factor.
const dxyConstant = 50.14348112

// The range outside which a computed index is treated as a data error.
const dxyMin, dxyMax = 70.0, 170.0

// DollarIndex computes the US dollar index from the six pairs' prices:
// 50.14348112 × EURUSD^-0.576 × USDJPY^0.136 × GBPUSD^-0.119 ×
// USDCAD^0.091 × USDSEK^0.042 × USDCHF^0.036. It returns an error naming
// the pair when one is missing or not positive, and when the result is
// outside a plausible range (70–170: the index has stayed within it since 1973).
func DollarIndex(prices map[string]float64) (float64, error) {
	v := dxyConstant
	for _, pair := range DXYInputs {
		p, ok := prices[pair]
		if !ok {
			return 0, fmt.Errorf("dollar index: no price for %s", pair)
		}
		if !(p > 0) || math.IsInf(p, 0) {
			return 0, fmt.Errorf("dollar index: price of %s is %v, want a positive number", pair, p)
		}
		v *= math.Pow(p, dxyWeights[pair])
	}
	if v < dxyMin || v > dxyMax {
		return 0, fmt.Errorf("dollar index: %.4f is outside the plausible range %v–%v", v, dxyMin, dxyMax)
	}
	return v, nil
}

// inputBars decodes the results of the DXY inputs, naming the input that
// is missing or unreadable.
func inputBars(inputs map[string][]byte) (map[string]Bar, error) {
	out := make(map[string]Bar, len(DXYInputs))
	for _, pair := range DXYInputs {
		raw, ok := inputs[pair]
		if !ok {
			return nil, fmt.Errorf("input %s is missing", pair)
		}
		var r Bar
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("input %s: %w", pair, err)
		}
		out[pair] = r
	}
	return out, nil
}
