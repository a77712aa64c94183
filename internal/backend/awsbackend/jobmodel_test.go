package awsbackend_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/jobmodeltest"
)

// The job model end to end on DynamoDB+SQS (the emulators): every case
// of the suite, grouped (TestJobModelOnAWS/<group>/<case>), each on a
// table and queue of its own. A case's job queues are SQS queues made
// before the backend opens; the priority classes are separate queues
// (no PriorityPool: an empty receive is a billed request).
func TestJobModelOnAWS(t *testing.T) {
	t.Parallel()
	jobmodeltest.Run(t, jobmodeltest.Harness{
		Engine: "aws",
		OpenFunc: func(t *testing.T, jobQueues ...string) backend.Backend {
			c := clients(t)
			res := setUp(t, c, 5)
			urls := map[string]string{}
			for _, name := range jobQueues {
				q, err := awsbackend.Setup(t.Context(), c, awsbackend.SetupParams{Table: res.Table, Queue: uniqueName(name), MaxReceives: 5, Visibility: 10 * time.Second})
				require.NoError(t, err)
				urls[name] = q.QueueURL
			}
			b, err := awsbackend.Open(t.Context(), awsbackend.Params{Clients: c, Table: res.Table, QueueURL: res.QueueURL, JobQueueURLs: urls})
			require.NoError(t, err)
			return b
		},
		Caps: jobmodeltest.Capabilities{PriorityPool: false},
	})
}
