// Package awsbackend opens baton's engine backend on AWS: the lease, ledger
// and effect stores on one DynamoDB table (package awsdynamodb) and the work
// queue and its dead-letter queue on SQS (package awssqs). It is what
// `baton run|invoke|setup --backend aws` stand on, against an account or
// against local servers that speak the two protocols.
//
// The SDK configuration is the standard chain (config.LoadDefaultConfig):
// region, credentials, profiles, and endpoint overrides such as
// AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SQS. Endpoints set
// per-service endpoints on top of it, for callers that take them as flags.
//
// The resources are named as the Lambda functions name them (see package
// lambdaapp: BATON_TABLE, BATON_QUEUE_URL, BATON_DLQ_URL,
// BATON_MAX_RECEIVES); Open fills the dead-letter queue and the receive
// limit from the work queue's redrive policy when they are not given, so
// that the consumer's forwarding agrees with the queue's own redrive.
//
// The engine package stays free of AWS imports: this package is the only
// place where a backend.Backend is made of AWS adapters.
package awsbackend
