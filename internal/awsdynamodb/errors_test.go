package awsdynamodb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/stretchr/testify/require"
)

// withStatus wraps err in the response error the SDK returns for an HTTP
// status.
func withStatus(status int, err error) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "UpdateItem", Err: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      err,
	}}
}

func TestTranslateError(t *testing.T) {
	t.Parallel()
	require.NoError(t, translateError("tbl", "op", nil))

	err := translateError("tbl", "acquire lease fx", withStatus(400, &types.ResourceNotFoundException{Message: aws.String("Requested resource not found")}))
	require.ErrorIs(t, err, ErrTableNotFound)
	require.ErrorContains(t, err, `"tbl"`)
	require.ErrorContains(t, err, "acquire lease fx")
	var rnf *types.ResourceNotFoundException
	require.ErrorAs(t, err, &rnf, "the SDK's type stays reachable")

	throttled := &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}
	err = translateError("tbl", "claim x", withStatus(400, throttled))
	require.NotErrorIs(t, err, ErrTableNotFound)
	var got *types.ProvisionedThroughputExceededException
	require.ErrorAs(t, err, &got, "the SDK's type stays reachable")
	require.ErrorContains(t, err, "claim x")
	require.ErrorContains(t, err, `"tbl"`)
}

func TestConditionFailed(t *testing.T) {
	t.Parallel()
	old := record{"owner": str("a")}
	rec, ok := conditionFailed(withStatus(400, &types.ConditionalCheckFailedException{Item: old}))
	require.True(t, ok)
	require.Equal(t, old, rec)
	rec, ok = conditionFailed(withStatus(400, &types.ConditionalCheckFailedException{}))
	require.True(t, ok)
	require.Nil(t, rec)
	_, ok = conditionFailed(errors.New("x"))
	require.False(t, ok)
}

func TestMayHaveApplied(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"condition failed", withStatus(400, &types.ConditionalCheckFailedException{}), false},
		{"validation", withStatus(400, &smithy.GenericAPIError{Code: "ValidationException", Fault: smithy.FaultUnknown}), false},
		{"throttled", withStatus(400, &types.ProvisionedThroughputExceededException{}), false},
		{"client fault without status", &types.ResourceNotFoundException{}, false},
		{"internal server error", withStatus(500, &types.InternalServerError{}), true},
		{"unknown 503", withStatus(503, &smithy.GenericAPIError{Code: "ServiceUnavailable"}), true},
		{"response lost", fmt.Errorf("read response: %w", io.ErrUnexpectedEOF), true},
		{"deadline", context.DeadlineExceeded, true},
	} {
		require.Equal(t, tc.want, mayHaveApplied(tc.err), tc.name)
	}
}

func TestTTLUnavailable(t *testing.T) {
	t.Parallel()
	require.True(t, ttlUnavailable(withStatus(400, &smithy.GenericAPIError{Code: "UnknownOperationException"})))
	require.True(t, ttlUnavailable(withStatus(400, &smithy.GenericAPIError{Code: "ValidationException", Message: "TimeToLive is already enabled"})))
	require.False(t, ttlUnavailable(withStatus(400, &smithy.GenericAPIError{Code: "ValidationException", Message: "something else"})))
	require.False(t, ttlUnavailable(withStatus(400, &smithy.GenericAPIError{Code: "AccessDeniedException"})))
	require.False(t, ttlUnavailable(io.EOF))
}

func TestCheckKeySchema(t *testing.T) {
	t.Parallel()
	schema := func(hash, rng string, typ types.ScalarAttributeType) *types.TableDescription {
		d := &types.TableDescription{
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}},
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(hash), AttributeType: typ}},
		}
		if rng != "" {
			d.KeySchema = append(d.KeySchema, types.KeySchemaElement{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange})
			d.AttributeDefinitions = append(d.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(rng), AttributeType: types.ScalarAttributeTypeS})
		}
		return d
	}
	require.NoError(t, checkKeySchema(schema("pk", "sk", types.ScalarAttributeTypeS)))
	require.Error(t, checkKeySchema(schema("pk", "", types.ScalarAttributeTypeS)))
	require.Error(t, checkKeySchema(schema("id", "sk", types.ScalarAttributeTypeS)))
	require.Error(t, checkKeySchema(schema("sk", "pk", types.ScalarAttributeTypeS)))
	require.Error(t, checkKeySchema(schema("pk", "sk", types.ScalarAttributeTypeN)))
	require.Error(t, checkKeySchema(nil))
}
