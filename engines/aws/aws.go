// Package aws links the AWS engine: DynamoDB and SQS (name "aws", URL aws://?table=T&queue=URL).
// Import it for its effect only:
//
//	import _ "github.com/batonhq/baton/engines/aws"
package aws

import _ "github.com/batonhq/baton/internal/backend/awsbackend" // registers the engine
