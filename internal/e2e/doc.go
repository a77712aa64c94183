// Package e2e holds end-to-end tests that cross package boundaries: the
// Lambda handlers on real DynamoDB- and SQS-compatible servers, fed the way
// Lambda feeds them. It has no code of its own.
package e2e
