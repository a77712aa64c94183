package awsdynamodb

import (
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// ErrTableNotFound is returned (wrapped, naming the table) when the table
// does not exist: create it with CreateTable (baton setup).
var ErrTableNotFound = errors.New("dynamodb table not found")

// translateError turns an SDK error of an operation on table into the error
// the stores return. It is the one place SDK errors are interpreted:
//   - a missing table becomes ErrTableNotFound, naming the table;
//   - everything else (throttling after the SDK's retries, validation,
//     transport) is wrapped with the operation, unchanged underneath, so
//     that errors.As still reaches the SDK's types.
//
// ConditionalCheckFailedException never gets here: the callers turn it into
// the ports' sentinels from the record that made the condition fail.
func translateError(table, op string, err error) error {
	if err == nil {
		return nil
	}
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return fmt.Errorf("%s: %w: %q (create it with baton setup): %w", op, ErrTableNotFound, table, err)
	}
	return fmt.Errorf("%s on table %q: %w", op, table, err)
}

// conditionFailed reports whether err is a failed condition, and returns
// the record the server sent back with it (nil when it sent none: the
// caller reads the record itself).
func conditionFailed(err error) (record, bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item, true
	}
	return nil, false
}

// mayHaveApplied reports whether a write that returned err may nevertheless
// have been applied: the request may have reached the server and no
// response says it was refused (a transport error or timeout after sending,
// or a server-side 5xx). A response with a 4xx status, or an error the SDK
// classifies as the client's fault, means the write was refused.
func mayHaveApplied(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := conditionFailed(err); ok {
		return false
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() >= 400 && status.HTTPStatusCode() < 500 {
		return false
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorFault() == smithy.FaultClient {
		return false
	}
	return true
}
