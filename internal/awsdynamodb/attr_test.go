package awsdynamodb

import (
	"math"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func TestNames(t *testing.T) {
	t.Parallel()
	require.Nil(t, names(":a = :b"))
	require.Equal(t, map[string]string{"#owner": "owner", "#expires_at": "expires_at", "#pk": "pk"},
		names("attribute_not_exists(#pk) OR #owner = :owner", "SET #expires_at = :e, #owner = :o"))
}

func TestUsed(t *testing.T) {
	t.Parallel()
	values := record{":a": num(1), ":ab": num(2), ":b": num(3), ":c": num(4)}
	got := used(values, "SET #x = :ab", "#y = :b OR #z <= :b")
	require.Equal(t, record{":ab": num(2), ":b": num(3)}, got)
}

func TestContainsPlaceholder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr, p string
		want    bool
	}{
		{"#a = :one", ":one", true},
		{"#a = :one_more", ":one", false},
		{"#a = :one_more, #b = :one", ":one", true},
		{"if_not_exists(#a, :one) + :one", ":one", true},
		{"#a = :ones", ":one", false},
		{"", ":one", false},
	} {
		require.Equal(t, tc.want, containsPlaceholder(tc.expr, tc.p), "%q in %q", tc.p, tc.expr)
	}
}

func TestUpdateExpression(t *testing.T) {
	t.Parallel()
	set := make([]string, 1, 4)
	set[0] = "#a = :a"
	u := update{set: set, remove: []string{"#b", "#c"}}
	require.Equal(t, "SET #a = :a, #tok = :tok REMOVE #b, #c", u.expression())
	// The token clause is not appended into the caller's backing array.
	require.Equal(t, "SET #a = :a, #tok = :tok REMOVE #b, #c", u.expression())
	require.Len(t, u.set, 1)
	require.Equal(t, "SET #tok = :tok", update{}.expression())
}

func TestFloat(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, 1.5, -1.0842, 1e-130, 9.99e125, math.SmallestNonzeroFloat64 * 0} {
		v, err := float(f)
		require.NoError(t, err, "%v", f)
		d := decoder{rec: record{"x": v}}
		require.Equal(t, f, d.float("x"))
		require.NoError(t, d.err)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e126, -1e200, 1e-131, math.SmallestNonzeroFloat64} {
		_, err := float(f)
		require.Error(t, err, "%v", f)
	}
}

func TestDecoder(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 1, 0, 123, time.UTC)
	d := decoder{rec: record{
		"s": str("x"),
		"n": num(42),
		"t": nanos(now),
		"z": nanos(time.Time{}),
		"b": &types.AttributeValueMemberB{Value: []byte("r")},
	}}
	require.Equal(t, "x", d.str("s"))
	require.Equal(t, int64(42), d.int64("n"))
	require.Equal(t, 42, d.int("n"))
	require.Equal(t, now, d.time("t"))
	require.True(t, d.time("z").IsZero())
	require.Equal(t, []byte("r"), d.bytes("b"))
	require.Equal(t, "", d.str("missing"))
	require.Zero(t, d.int("missing"))
	require.Nil(t, d.bytes("missing"))
	require.NoError(t, d.err)

	d.str("n") // a number where a string is expected
	require.ErrorContains(t, d.err, `attribute "n"`)
	first := d.err
	d.int("s")
	require.Equal(t, first, d.err, "keeps the first error")

	bad := decoder{rec: record{"n": &types.AttributeValueMemberN{Value: "1.5"}}}
	bad.int64("n")
	require.Error(t, bad.err)
}

func TestNanos(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(0), toNanos(time.Time{}))
	require.True(t, fromNanos(0).IsZero())
	at := time.Date(2026, 11, 21, 12, 1, 0, 999, time.FixedZone("x", 3600))
	require.True(t, at.Equal(fromNanos(toNanos(at))))
	require.Equal(t, time.UTC, fromNanos(toNanos(at)).Location())
}

func TestTokens(t *testing.T) {
	t.Parallel()
	a, b := newToken(), newToken()
	require.NotEqual(t, a, b)
	require.Len(t, a, 24)
	require.Equal(t, a, tokenOf(record{attrToken: str(a)}))
	require.Equal(t, "", tokenOf(nil))
	require.Equal(t, "", tokenOf(record{attrToken: num(1)}))
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	v, ok := newTable(nil, "t", nil).expiry(now)
	require.True(t, ok)
	require.Equal(t, num(now.Add(DefaultRetention).Unix()), v)
	v, ok = newTable(nil, "t", &Options{Retention: time.Hour}).expiry(now)
	require.True(t, ok)
	require.Equal(t, num(now.Add(time.Hour).Unix()), v)
	_, ok = newTable(nil, "t", &Options{Retention: -1}).expiry(now)
	require.False(t, ok)
}

func TestClaimable(t *testing.T) {
	t.Parallel()
	require.Equal(t, "(#state = :failed) OR (#state = :running AND #lease_until <= :cutoff)", claimable(""))
	require.Equal(t, "(#state = :failed AND #attempt < :max) OR (#state = :running AND #lease_until <= :cutoff AND #attempt < :max)",
		claimable("#attempt < :max"))
}
