package awsdynamodb

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// record is one DynamoDB item as the SDK returns it.
type record = map[string]types.AttributeValue

// Attribute values for expressions.

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// nanos is a time as a Number of Unix nanoseconds; the zero time is 0.
func nanos(t time.Time) types.AttributeValue { return num(toNanos(t)) }

func toNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// float is f as a Number. DynamoDB numbers hold magnitudes from 1e-130 to
// below 1e126 (and zero); NaN and infinities have no representation.
func float(f float64) (types.AttributeValue, error) {
	a := math.Abs(f)
	if math.IsNaN(f) || math.IsInf(f, 0) || (a != 0 && (a < 1e-130 || a >= 1e126)) {
		return nil, fmt.Errorf("number %v cannot be stored in DynamoDB (finite, 0 or magnitude 1e-130 to 1e126)", f)
	}
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(f, 'g', -1, 64)}, nil
}

// decoder reads attributes of a record, keeping the first error. A missing
// attribute reads as its zero value: records leave out what is unset.
type decoder struct {
	rec record
	err error
}

func (d *decoder) fail(name string, err error) {
	if d.err == nil {
		d.err = fmt.Errorf("attribute %q: %w", name, err)
	}
}

func (d *decoder) str(name string) string {
	switch v := d.rec[name].(type) {
	case nil:
		return ""
	case *types.AttributeValueMemberS:
		return v.Value
	default:
		d.fail(name, fmt.Errorf("want a string, got %T", v))
		return ""
	}
}

func (d *decoder) bytes(name string) []byte {
	switch v := d.rec[name].(type) {
	case nil:
		return nil
	case *types.AttributeValueMemberB:
		return v.Value
	default:
		d.fail(name, fmt.Errorf("want binary, got %T", v))
		return nil
	}
}

func (d *decoder) number(name string) string {
	switch v := d.rec[name].(type) {
	case nil:
		return ""
	case *types.AttributeValueMemberN:
		return v.Value
	default:
		d.fail(name, fmt.Errorf("want a number, got %T", v))
		return ""
	}
}

func (d *decoder) int64(name string) int64 {
	s := d.number(name)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		d.fail(name, err)
	}
	return n
}

func (d *decoder) int(name string) int {
	n := d.int64(name)
	if n != int64(int(n)) {
		d.fail(name, fmt.Errorf("%d overflows int", n))
	}
	return int(n)
}

func (d *decoder) float(name string) float64 {
	s := d.number(name)
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		d.fail(name, err)
	}
	return f
}

func (d *decoder) time(name string) time.Time { return fromNanos(d.int64(name)) }

// strAttr returns the string attribute name of r ("" when r is nil, or
// has no such string attribute).
func strAttr(r record, name string) string {
	if v, ok := r[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// numAttr returns the number attribute name of r, and whether r has one
// that parses.
func numAttr(r record, name string) (int64, bool) {
	v, ok := r[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	return n, err == nil
}

// tokenOf returns the write token stored in r ("" when there is none).
func tokenOf(r record) string { return strAttr(r, attrToken) }

// namePattern matches the attribute-name placeholders of an expression.
var namePattern = regexp.MustCompile(`#[A-Za-z_][A-Za-z0-9_]*`)

// names returns the ExpressionAttributeNames for exprs: every placeholder
// "#x" stands for the attribute "x". Every attribute is named through a
// placeholder, so no attribute name can collide with DynamoDB's reserved
// words (owner, state, cursor, ttl, …). It returns nil when there is none.
func names(exprs ...string) map[string]string {
	var m map[string]string
	for _, e := range exprs {
		for _, p := range namePattern.FindAllString(e, -1) {
			if m == nil {
				m = map[string]string{}
			}
			m[p] = p[1:]
		}
	}
	return m
}

// used returns the entries of values whose placeholders exprs use:
// DynamoDB refuses a request with an unused value, and callers may keep a
// common set of values (the item states) in every request's map.
func used(values record, exprs ...string) record {
	out := make(record, len(values)+1)
	for p, v := range values {
		for _, e := range exprs {
			if containsPlaceholder(e, p) {
				out[p] = v
				break
			}
		}
	}
	return out
}

// containsPlaceholder reports whether expression e uses the value
// placeholder p (":x"), as a whole word.
func containsPlaceholder(e, p string) bool {
	for i := 0; ; {
		j := strings.Index(e[i:], p)
		if j < 0 {
			return false
		}
		end := i + j + len(p)
		if end == len(e) || !isNameByte(e[end]) {
			return true
		}
		i = end
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
