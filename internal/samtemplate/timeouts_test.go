package samtemplate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/samtemplate"
)

func TestRepositoryTemplateTimeoutsCoverTheLeases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, samtemplate.CheckTimeouts(b.tpl, fx.Catalog(nil)))

	// A derived item that needs longer than the consumer's 30 s.
	long := fx.Job(nil)
	long.Derived[0].Lease = 45 * time.Second
	err := samtemplate.CheckTimeouts(b.tpl, baton.MustCatalog(long))
	require.EqualError(t, err, "job fx: consumer function ConsumerFunction has Timeout 30s, below the job's longest item lease 45s: "+
		"a claim cannot outlive the invocation and no heartbeat extends it past that; set Timeout to at least 45")
}

func TestCheckTimeouts(t *testing.T) {
	t.Parallel()
	const consumer = `
Globals:
  Function:
    Timeout: %s
Resources:
  Work:
    Type: AWS::SQS::Queue
    Properties:
      %s
  Consumer:
    Type: AWS::Serverless::Function
    Properties:
      %s
      Events:
        Work:
          Type: SQS
          Properties:
            Queue: !GetAtt Work.Arn
  Coordinator:
    Type: AWS::Serverless::Function
    Properties:
      Timeout: 1
`
	cases := []struct {
		name, global, queue, fn string
		err                     string
	}{
		{"fits", "10", "VisibilityTimeout: 180", "Timeout: 60", ""},
		{"global timeout", "60", "VisibilityTimeout: 60", "MemorySize: 128", ""},
		{"timeout below the lease", "10", "VisibilityTimeout: 180", "Timeout: 20",
			"job fx: consumer function Consumer has Timeout 20s, below the job's longest item lease 30s"},
		{"SAM's default timeout", "", "VisibilityTimeout: 180", "MemorySize: 128",
			"job fx: consumer function Consumer has Timeout 3s"},
		{"visibility below the timeout", "10", "VisibilityTimeout: 40", "Timeout: 60",
			"queue Work has VisibilityTimeout 40s, below the Timeout 1m0s of its consumer function Consumer: set it to at least 60"},
		{"default visibility", "10", "MessageRetentionPeriod: 60", "Timeout: 60",
			"queue Work has VisibilityTimeout 30s"},
		{"not a number", "10", "VisibilityTimeout: 180", "Timeout: !Ref ConsumerTimeout",
			"Consumer: Timeout is map[Ref:ConsumerTimeout], not a number of seconds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tpl, err := samtemplate.Decode([]byte(fmt.Sprintf(consumer, c.global, c.queue, c.fn)))
			require.NoError(t, err)
			err = samtemplate.CheckTimeouts(tpl, fx.Catalog(nil))
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.err)
		})
	}
}
