// Command consumer is the consumer Lambda function: it processes batches
// of the work queue (one message per item) and reports the messages to
// redeliver as batch-item failures. Configuration and wiring live in
// internal/lambdaapp.
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/batonhq/baton/internal/lambdaapp"
)

func main() {
	ctx := context.Background()
	h, err := lambdaapp.NewConsumerFromEnv(ctx, lambdaapp.Env{Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		if rerr := lambdaapp.ReportInitError(ctx, os.Getenv("AWS_LAMBDA_RUNTIME_API"), err); rerr != nil {
			log.Print(rerr)
		}
		log.Fatal(err)
	}
	lambda.StartHandlerFunc(h.Handle)
}
