package awssqs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseRedrive(t *testing.T) {
	t.Parallel()
	const arn = "arn:aws:sqs:eu-west-1:123456789012:work-dlq"
	for _, raw := range []string{
		`{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":5}`,
		`{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":"5"}`,
	} {
		p, err := parseRedrive(raw)
		require.NoError(t, err, raw)
		require.Equal(t, RedrivePolicy{DeadLetterTargetARN: arn, MaxReceiveCount: 5}, p)
	}
	for _, raw := range []string{
		`not json`,
		`{"deadLetterTargetArn":"` + arn + `"}`,
		`{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":0}`,
		`{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":"many"}`,
		`{"maxReceiveCount":5}`,
	} {
		_, err := parseRedrive(raw)
		require.Error(t, err, raw)
	}
}
