package awsdynamodb_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/awsdynamodb"
)

// serverClient returns a client of a DynamoDB-compatible test server.
func serverClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	ep := os.Getenv("BATON_TEST_DYNAMODB_ENDPOINT")
	if ep == "" {
		t.Skip("no DynamoDB test server")
	}
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(ep),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		}),
	})
}

var tableSeq atomic.Int64

// newTable creates a fresh table on the test server and returns the client
// and the table's name.
func newTable(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	c := serverClient(t)
	name := fmt.Sprintf("baton-test-%d-%d", os.Getpid(), tableSeq.Add(1))
	require.NoError(t, awsdynamodb.CreateTable(context.Background(), c, name))
	return c, name
}
