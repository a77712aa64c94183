package localaws

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DynamoDBClient returns a DynamoDB client for the test binary's dynalite
// server (see DynamoDB). optFns tune the client as in dynamodb.NewFromConfig.
func DynamoDBClient(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(DynamoDB(t).Config(), optFns...)
}

// SQSClient returns an SQS client (JSON protocol) for the test binary's
// local-aws-sqs server (see SQS). optFns tune the client as in
// sqs.NewFromConfig.
func SQSClient(t testing.TB, optFns ...func(*sqs.Options)) *sqs.Client {
	t.Helper()
	return sqs.NewFromConfig(SQS(t).Config(), optFns...)
}
