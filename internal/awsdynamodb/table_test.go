package awsdynamodb

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"
)

// pager answers Query from n records with sort keys "0".."n-1", at most
// page records a call (fewer when the request's Limit is lower), as
// DynamoDB does past 1 MB; it records each request's start and limit.
type pager struct {
	API  // only Query is called
	n    int
	page int

	starts []string // sort key of each request's ExclusiveStartKey ("" for none)
	limits []int32  // each request's Limit (0 for none)
}

func (p *pager) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	lo := 0
	start := ""
	if in.ExclusiveStartKey != nil {
		start = strAttr(in.ExclusiveStartKey, "sk")
		i, err := strconv.Atoi(start)
		if err != nil {
			return nil, err
		}
		lo = i + 1
	}
	size := p.page
	var limit int32
	if in.Limit != nil {
		limit = *in.Limit
		size = min(size, int(limit))
	}
	p.starts, p.limits = append(p.starts, start), append(p.limits, limit)
	out := &dynamodb.QueryOutput{}
	hi := min(lo+size, p.n)
	for i := lo; i < hi; i++ {
		out.Items = append(out.Items, record{"pk": str("P"), "sk": str(strconv.Itoa(i))})
	}
	if hi < p.n || (limit > 0 && hi-lo == int(limit)) { // DynamoDB marks a page cut by Limit even at the end
		out.LastEvaluatedKey = record{"pk": str("P"), "sk": str(strconv.Itoa(hi - 1))}
	}
	return out, nil
}

func sortKeys(recs []record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = strAttr(r, "sk")
	}
	return out
}

func seq(lo, hi int) []string {
	var out []string
	for i := lo; i < hi; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

func TestQueryPages(t *testing.T) {
	t.Run("to the end", func(t *testing.T) {
		p := &pager{n: 7, page: 3}
		recs, err := newTable(p, "t", nil).query(t.Context(), "op", &dynamodb.QueryInput{TableName: aws.String("t")}, 0)
		require.NoError(t, err)
		require.Equal(t, seq(0, 7), sortKeys(recs))
		require.Equal(t, []string{"", "2", "5"}, p.starts, "each page starts after the last one")
		require.Equal(t, []int32{0, 0, 0}, p.limits)
	})
	t.Run("limit within a page", func(t *testing.T) {
		p := &pager{n: 7, page: 10}
		recs, err := newTable(p, "t", nil).query(t.Context(), "op", &dynamodb.QueryInput{}, 4)
		require.NoError(t, err)
		require.Equal(t, seq(0, 4), sortKeys(recs))
		require.Equal(t, []int32{4}, p.limits, "one call, no page past the limit")
	})
	t.Run("limit over pages", func(t *testing.T) {
		p := &pager{n: 20, page: 3}
		recs, err := newTable(p, "t", nil).query(t.Context(), "op", &dynamodb.QueryInput{}, 7)
		require.NoError(t, err)
		require.Equal(t, seq(0, 7), sortKeys(recs), "the first records, cut at the limit")
		require.Equal(t, []string{"", "2", "5"}, p.starts)
	})
	t.Run("limit past the end", func(t *testing.T) {
		p := &pager{n: 5, page: 2}
		recs, err := newTable(p, "t", nil).query(t.Context(), "op", &dynamodb.QueryInput{}, 9)
		require.NoError(t, err)
		require.Equal(t, seq(0, 5), sortKeys(recs))
		require.Len(t, p.starts, 3)
	})
	t.Run("limit capped at 1000 a page", func(t *testing.T) {
		p := &pager{n: 2500, page: 5000}
		recs, err := newTable(p, "t", nil).query(t.Context(), "op", &dynamodb.QueryInput{}, 2100)
		require.NoError(t, err)
		require.Equal(t, seq(0, 2100), sortKeys(recs))
		require.Equal(t, []int32{1000, 1000, 1000}, p.limits)
	})
}
