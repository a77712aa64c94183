package awsdynamodb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// TableAPI is the part of the DynamoDB client CreateTable uses.
// *dynamodb.Client implements it.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ TableAPI = (*dynamodb.Client)(nil)

// tableActiveTimeout bounds how long CreateTable waits for the table.
const tableActiveTimeout = 5 * time.Minute

// CreateTable creates the table the stores use, if it does not exist:
// key schema pk (String, partition) and sk (String, sort), on-demand
// billing. It waits until the table is ACTIVE, checks its key schema, and
// enables TTL on the ttl attribute. It is idempotent: an existing table
// with the right key schema is fine, and so is TTL already enabled or a
// server (an emulator) that does not implement UpdateTimeToLive.
func CreateTable(ctx context.Context, client TableAPI, table string) error {
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %q: %w", table, err)
	}
	desc, err := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	}).WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, tableActiveTimeout)
	if err != nil {
		return fmt.Errorf("create table %q: waiting for it to become active: %w", table, err)
	}
	if err := checkKeySchema(desc.Table); err != nil {
		return fmt.Errorf("create table %q: the existing table does not fit: %w", table, err)
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrTTL),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil && !ttlUnavailable(err) {
		return fmt.Errorf("create table %q: enabling TTL on %q: %w", table, attrTTL, err)
	}
	return nil
}

// checkKeySchema reports whether d has the stores' key schema.
func checkKeySchema(d *types.TableDescription) error {
	if d == nil {
		return errors.New("no table description")
	}
	want := map[string]types.KeyType{attrPK: types.KeyTypeHash, attrSK: types.KeyTypeRange}
	if len(d.KeySchema) != len(want) {
		return fmt.Errorf("key schema has %d attributes, want %s (HASH) and %s (RANGE)", len(d.KeySchema), attrPK, attrSK)
	}
	for _, k := range d.KeySchema {
		if want[aws.ToString(k.AttributeName)] != k.KeyType {
			return fmt.Errorf("key attribute %q is %s, want %s (HASH) and %s (RANGE)", aws.ToString(k.AttributeName), k.KeyType, attrPK, attrSK)
		}
	}
	for _, a := range d.AttributeDefinitions {
		if _, ok := want[aws.ToString(a.AttributeName)]; ok && a.AttributeType != types.ScalarAttributeTypeS {
			return fmt.Errorf("key attribute %q has type %s, want S", aws.ToString(a.AttributeName), a.AttributeType)
		}
	}
	return nil
}

// ttlUnavailable reports whether err from UpdateTimeToLive means there is
// nothing to do: TTL is already enabled, or the server does not implement
// the operation (emulators).
func ttlUnavailable(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch {
	case api.ErrorCode() == "UnknownOperationException":
		return true
	case api.ErrorCode() == "ValidationException" && strings.Contains(api.ErrorMessage(), "already enabled"):
		return true
	}
	return false
}
