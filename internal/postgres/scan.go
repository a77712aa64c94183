package postgres

import "errors"

// repeatedText is the scan destination of a text column into *dst that
// keeps *dst as it is when the value is the one it holds already: a
// column whose rows repeat one value (a batch's run, its items' state and
// owner, its messages' attributes) is then copied out of the driver's
// buffer once, not once per row. It is meant for a destination reused
// for every row (scanInPlace); strings are immutable, so the rows read
// before keep theirs.
type repeatedText struct{ dst *string }

// ScanBytes implements pgtype.BytesScanner: v is the driver's memory,
// valid during the call only.
func (t repeatedText) ScanBytes(v []byte) error {
	if v == nil {
		return errors.New("cannot scan NULL into a string")
	}
	if string(v) != *t.dst {
		*t.dst = string(v)
	}
	return nil
}

// scanInPlace returns dest with each *string replaced by its
// repeatedText, for a scan of many rows into the same destinations.
func scanInPlace(dest []any) []any {
	for i, d := range dest {
		if p, ok := d.(*string); ok {
			dest[i] = repeatedText{dst: p}
		}
	}
	return dest
}
