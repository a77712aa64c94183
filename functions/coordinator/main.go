// Command coordinator is the coordinator Lambda function: on each trigger
// of the job's schedule (or a manual replay) it leases the job, opens the
// tick's run and fans one message per asset out to the work queue.
// Configuration and wiring live in internal/lambdaapp.
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
	h, err := lambdaapp.NewCoordinatorFromEnv(ctx, lambdaapp.Env{Getenv: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		if rerr := lambdaapp.ReportInitError(ctx, os.Getenv("AWS_LAMBDA_RUNTIME_API"), err); rerr != nil {
			log.Print(rerr)
		}
		log.Fatal(err)
	}
	lambda.StartHandlerFunc(h.Handle)
}
