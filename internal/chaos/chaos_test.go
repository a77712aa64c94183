package chaos_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/backend/sqlitebackend"
	"github.com/batonhq/baton/internal/chaos"
	"github.com/batonhq/baton/internal/localaws"
	"github.com/batonhq/baton/internal/pgtest"
)

var (
	long = flag.Bool("chaos.long", false, "run the long chaos suite (make chaos) instead of the small one")
	seed = flag.Uint64("chaos.seed", 0, "seed of the run's random choices (0: from the clock)")
)

// harnesses are the engines under chaos: one entry per engine.
var harnesses = []chaos.Harness{
	{
		Name: "sqlite",
		Setup: func(t testing.TB) chaos.Spec {
			return chaos.Spec{"path": filepath.Join(t.TempDir(), "baton.db")}
		},
		Open: func(ctx context.Context, s chaos.Spec) (backend.Backend, error) {
			return sqlitebackend.Open(ctx, s["path"])
		},
		Processes: true,
	},
	{
		Name: "aws",
		Setup: func(t testing.TB) chaos.Spec {
			s := chaos.Spec{"dynamodb": localaws.DynamoDB(t).URL, "sqs": localaws.SQS(t).URL}
			res, err := awsbackend.Setup(t.Context(), awsClients(s), awsbackend.SetupParams{
				Table: uniqueName("chaos"), Queue: uniqueName("chaos"), MaxReceives: 5, Visibility: 3 * time.Second,
			})
			require.NoError(t, err)
			s["table"], s["queue"] = res.Table, res.QueueURL
			return s
		},
		Open: func(ctx context.Context, s chaos.Spec) (backend.Backend, error) {
			return awsbackend.Open(ctx, awsbackend.Params{
				Clients: awsClients(s), Table: s["table"], QueueURL: s["queue"], ReceiveWait: time.Second,
			})
		},
		Processes: true,
	},
}

// awsClients are SDK clients for the local servers of s, built from s
// alone (consumer processes build them too).
func awsClients(s chaos.Spec) awsbackend.Clients {
	cfg := aws.Config{Region: localaws.Region, Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	return awsbackend.NewClients(cfg, awsbackend.Endpoints{DynamoDB: s["dynamodb"], SQS: s["sqs"]})
}

var names atomic.Int64

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, names.Add(1))
}

func TestMain(m *testing.M) {
	chaos.WorkerMain(harnesses)
	code := m.Run()
	localaws.Stop()
	pgtest.Stop()
	os.Exit(code)
}

func config() chaos.Config {
	cfg := chaos.Small()
	if *long {
		cfg = chaos.Long()
	}
	cfg.Seed = *seed
	return cfg
}

// TestChaos runs the suite on every engine and fails when a goal is
// missed: 0 items lost, 0 effects applied twice, 0 runs stuck, 100 % of
// the poison dead-lettered with its reason, 100 % of the superseded
// messages acknowledged as such. Each engine runs it twice: with the job
// processed item by item, and as a bulk job (baton.Job.Bulk: its shard
// messages run in place), with the same goals.
func TestChaos(t *testing.T) {
	t.Parallel()
	for _, h := range harnesses {
		for _, bulk := range []bool{false, true} {
			name := h.Name
			if bulk {
				name += "-bulk"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				cfg := config()
				cfg.Bulk = bulk
				cfg.Logf = t.Logf
				rep := chaos.Run(t, h, cfg)
				if *long {
					fmt.Println(rep.Table()) // the table as it is, for RELIABILITY.md
				} else {
					t.Log("\n" + rep.Table())
				}
				require.Empty(t, rep.Missed(), "chaos goals missed on %s:\n%s", name, rep.Table())
			})
		}
	}
}
