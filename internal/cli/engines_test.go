package cli

// The engines --backend names in these tests, as batoncli links them: the
// command line opens them through the registry only.
import (
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/batonhq/baton/engines/aws"
	_ "github.com/batonhq/baton/engines/postgres"
	_ "github.com/batonhq/baton/engines/sqlite"
	"github.com/batonhq/baton/internal/awssqs"
)

// --receive-wait's bound is SQS's longest long poll.
func TestMaxReceiveWaitIsSQSs(t *testing.T) {
	t.Parallel()
	require.Equal(t, awssqs.MaxWait, maxReceiveWait)
}
