// Command minimal is the reference for the Lambda artifact figures: an
// SQS-triggered function that does nothing but acknowledge the batch,
// built the same way as baton's functions.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func handle(_ context.Context, _ events.SQSEvent) (events.SQSEventResponse, error) {
	return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}, nil
}

func main() { lambda.StartHandlerFunc(handle) }
