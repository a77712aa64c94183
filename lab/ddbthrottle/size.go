package ddbthrottle

import (
	"encoding/base64"
	"strings"
)

// attrValue is one DynamoDB attribute value in the JSON protocol.
type attrValue struct {
	S    *string              `json:"S,omitempty"`
	N    *string              `json:"N,omitempty"`
	B    *string              `json:"B,omitempty"`
	BOOL *bool                `json:"BOOL,omitempty"`
	NULL *bool                `json:"NULL,omitempty"`
	L    []attrValue          `json:"L,omitempty"`
	M    map[string]attrValue `json:"M,omitempty"`
	SS   []string             `json:"SS,omitempty"`
	NS   []string             `json:"NS,omitempty"`
	BS   []string             `json:"BS,omitempty"`
}

// item is an item or a key: attribute name → value.
type item map[string]attrValue

// itemSize is DynamoDB's size of an item: for each attribute the UTF-8
// length of its name plus the size of its value.
func itemSize(it item) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize follows DynamoDB's rules: strings and binaries their length in
// bytes, numbers about one byte per two significant digits plus one, BOOL
// and NULL one byte, lists and maps 3 bytes plus one byte per element plus
// the elements (and a map's names), sets the sum of their elements.
func valueSize(v attrValue) int {
	switch {
	case v.S != nil:
		return len(*v.S)
	case v.N != nil:
		return numberSize(*v.N)
	case v.B != nil:
		return binarySize(*v.B)
	case v.BOOL != nil, v.NULL != nil:
		return 1
	case v.L != nil:
		n := 3
		for _, e := range v.L {
			n += 1 + valueSize(e)
		}
		return n
	case v.M != nil:
		n := 3
		for name, e := range v.M {
			n += 1 + len(name) + valueSize(e)
		}
		return n
	case v.SS != nil:
		n := 0
		for _, s := range v.SS {
			n += len(s)
		}
		return n
	case v.NS != nil:
		n := 0
		for _, s := range v.NS {
			n += numberSize(s)
		}
		return n
	case v.BS != nil:
		n := 0
		for _, s := range v.BS {
			n += binarySize(s)
		}
		return n
	}
	return 0
}

func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, ".", "", 1)
	s = strings.Trim(s, "0")
	return (len(s)+1)/2 + 1
}

func binarySize(b64 string) int {
	if n, err := base64.StdEncoding.DecodeString(b64); err == nil {
		return len(n)
	}
	return len(b64) * 3 / 4
}

// writeUnits is the write units of a write of size bytes: one per started
// KB, at least one.
func writeUnits(size int) float64 {
	return float64(max(1, (size+1023)/1024))
}

// readUnits is the read units of a read returning size bytes: one per
// started 4 KB, at least one, half for an eventually consistent read.
func readUnits(size int, consistent bool) float64 {
	u := float64(max(1, (size+4095)/4096))
	if !consistent {
		u /= 2
	}
	return u
}
