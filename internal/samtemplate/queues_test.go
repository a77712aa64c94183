package samtemplate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/samtemplate"
)

// noisyCatalog is the reference job and a job on a queue of its own.
func noisyCatalog(concurrency int) *baton.Catalog {
	noisy := baton.Job{Name: "noisy", Schedule: "rate(5 minutes)", Assets: []string{"a"},
		Queue:     baton.JobQueue{Name: "noisy", MaxConcurrency: concurrency},
		Processor: baton.ProcessorFunc(func(context.Context, baton.Task) ([]byte, error) { return nil, nil })}
	return baton.MustCatalog(fx.Job(nil), noisy)
}

// withNoisyQueue is template.yaml with the job queue "noisy" added the
// documented way (docs/queues.md, "A job on a queue of its own"), edited by the
// edits given (old → new) afterwards.
func withNoisyQueue(t *testing.T, root string, edits ...string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	require.NoError(t, err)
	s := string(raw)
	replace := func(old, new string) {
		t.Helper()
		require.Equal(t, 1, strings.Count(s, old), "template.yaml no longer holds %q once", old)
		s = strings.Replace(s, old, new, 1)
	}
	replace("        BATON_JOB_QUEUE_URLS: \"\"\n", "        BATON_JOB_QUEUE_URLS: !Sub \"noisy=${NoisyQueue}\"\n")
	replace("  # Ticks that never ran: triggers the scheduler could not deliver to the\n",
		`  NoisyQueue:
    Type: AWS::SQS::Queue
    DeletionPolicy: Delete
    UpdateReplacePolicy: Delete
    Properties:
      VisibilityTimeout: 180
      MessageRetentionPeriod: 345600
      SqsManagedSseEnabled: true
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt DeadLetterQueue.Arn
        maxReceiveCount: 5

  # Ticks that never ran: triggers the scheduler could not deliver to the
`)
	replace("            ScalingConfig:\n              MaximumConcurrency: 5\n",
		`            ScalingConfig:
              MaximumConcurrency: 5
        Noisy:
          Type: SQS
          Properties:
            Queue: !GetAtt NoisyQueue.Arn
            BatchSize: 10
            FunctionResponseTypes: [ReportBatchItemFailures]
            ScalingConfig:
              MaximumConcurrency: 3
`)
	// The roles: the coordinator fans out to it, the consumer reads it and
	// fans in to it.
	replace("              - Sid: FanOut\n                Effect: Allow\n                Action: [sqs:SendMessage]\n                Resource: !GetAtt WorkQueue.Arn\n",
		"              - Sid: FanOut\n                Effect: Allow\n                Action: [sqs:SendMessage]\n                Resource: [!GetAtt WorkQueue.Arn, !GetAtt NoisyQueue.Arn]\n")
	replace("                Action: [sqs:ReceiveMessage, sqs:DeleteMessage, sqs:ChangeMessageVisibility, sqs:GetQueueAttributes]\n                Resource: !GetAtt WorkQueue.Arn\n",
		"                Action: [sqs:ReceiveMessage, sqs:DeleteMessage, sqs:ChangeMessageVisibility, sqs:GetQueueAttributes]\n                Resource: [!GetAtt WorkQueue.Arn, !GetAtt NoisyQueue.Arn]\n")
	replace("                  - !GetAtt WorkQueue.Arn\n                  - !GetAtt DeadLetterQueue.Arn\n",
		"                  - !GetAtt WorkQueue.Arn\n                  - !GetAtt NoisyQueue.Arn\n                  - !GetAtt DeadLetterQueue.Arn\n")
	for i := 0; i+1 < len(edits); i += 2 {
		replace(edits[i], edits[i+1])
	}
	return s
}

func TestCheckQueues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	check := func(src string, c *baton.Catalog) error {
		t.Helper()
		tpl, err := samtemplate.Decode([]byte(src))
		require.NoError(t, err)
		return samtemplate.CheckQueues(tpl, c)
	}
	raw, err := os.ReadFile(filepath.Join(b.root, "template.yaml"))
	require.NoError(t, err)
	require.NoError(t, check(string(raw), fx.Catalog(nil)), "no job queue: nothing to check")
	require.NoError(t, check(withNoisyQueue(t, b.root), noisyCatalog(3)))

	for _, tc := range []struct {
		name    string
		src     string
		catalog *baton.Catalog
		want    string
	}{
		{"the template lacks the queue", string(raw), noisyCatalog(3), "queue noisy (jobs noisy): function ConsumerFunction is not given its URL"},
		{"another concurrency", withNoisyQueue(t, b.root), noisyCatalog(4), "Noisy has ScalingConfig.MaximumConcurrency 3, the queue's MaxConcurrency is 4"},
		{"a queue no job uses", withNoisyQueue(t, b.root), fx.Catalog(nil), "names queue noisy, which no job of the catalog uses"},
		{"no event reads it", withNoisyQueue(t, b.root, "            Queue: !GetAtt NoisyQueue.Arn\n", "            Queue: !GetAtt WorkQueue.Arn\n"),
			noisyCatalog(3), "no consumer function reads NoisyQueue"},
		{"no redrive", withNoisyQueue(t, b.root, "        deadLetterTargetArn: !GetAtt DeadLetterQueue.Arn\n        maxReceiveCount: 5\n\n", "        deadLetterTargetArn: \"\"\n\n"),
			noisyCatalog(3), "NoisyQueue has no RedrivePolicy"},
		{"the consumer may not read it", withNoisyQueue(t, b.root,
			"sqs:GetQueueAttributes]\n                Resource: [!GetAtt WorkQueue.Arn, !GetAtt NoisyQueue.Arn]\n",
			"sqs:GetQueueAttributes]\n                Resource: !GetAtt WorkQueue.Arn\n"),
			noisyCatalog(3), "role ConsumerRole of ConsumerFunction does not grant sqs:ReceiveMessage on NoisyQueue"},
		{"the coordinator may not fan out to it", withNoisyQueue(t, b.root,
			"Action: [sqs:SendMessage]\n                Resource: [!GetAtt WorkQueue.Arn, !GetAtt NoisyQueue.Arn]\n",
			"Action: [sqs:SendMessage]\n                Resource: !GetAtt WorkQueue.Arn\n"),
			noisyCatalog(3), "role CoordinatorRole of CoordinatorFunction does not grant sqs:SendMessage on NoisyQueue"},
		{"not a !Sub", withNoisyQueue(t, b.root, `BATON_JOB_QUEUE_URLS: !Sub "noisy=${NoisyQueue}"`, `BATON_JOB_QUEUE_URLS: noisy`),
			noisyCatalog(3), `BATON_JOB_QUEUE_URLS: want !Sub`},
	} {
		err := check(tc.src, tc.catalog)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

// TestJobQueueTemplateLints: the documented addition of a job queue is a
// template cfn-lint accepts (the event-source mapping's ScalingConfig
// included).
func TestJobQueueTemplateLints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lint, err := findTool("cfn-lint")
	if err != nil {
		missingTool(t, err.Error())
	}
	path := filepath.Join(t.TempDir(), "template.yaml")
	require.NoError(t, os.WriteFile(path, []byte(withNoisyQueue(t, b.root)), 0o600))
	var out bytes.Buffer
	cmd := exec.Command(lint, "--include-checks", "I", "--", path)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "cfn-lint:\n%s", out.String())
	require.Empty(t, strings.TrimSpace(out.String()))
}

// TestJobQueueTemplateExpands: the SAM translator turns the job queue's
// event into an event-source mapping of its own with the queue's
// MaximumConcurrency, beside the work queue's.
func TestJobQueueTemplateExpands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	py, err := findTranslatorPython()
	if err != nil {
		missingTool(t, err.Error())
	}
	path := filepath.Join(t.TempDir(), "template.yaml")
	require.NoError(t, os.WriteFile(path, []byte(withNoisyQueue(t, b.root)), 0o600))
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(py, filepath.Join("testdata", "expand.py"), path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	var tpl map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &tpl))
	concurrency := map[string]float64{}
	for _, r := range at(t, tpl, "Resources").(map[string]any) {
		if at(t, r, "Type") != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		queue, _, _ := refTo(at(t, r, "Properties", "EventSourceArn"))
		concurrency[queue] = at(t, r, "Properties", "ScalingConfig", "MaximumConcurrency").(float64)
	}
	require.Equal(t, map[string]float64{"WorkQueue": 5, "NoisyQueue": 3}, concurrency)
}
