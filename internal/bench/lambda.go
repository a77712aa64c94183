package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/lambdaruntime"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/tailbuf"
)

// LambdaParams are the inputs of the Lambda artifact scenario.
type LambdaParams struct {
	// ModuleDir is the module's root: ./functions/<name> are built there.
	ModuleDir string
	// WorkDir receives the builds.
	WorkDir string
	// DynamoDB and SQS are the endpoints the functions use (BaseEndpoint
	// set, as from localaws.Endpoint.Config).
	DynamoDB, SQS aws.Config
	// Arm64 also builds for linux/arm64, the deployed architecture, for
	// the sizes.
	Arm64 bool
}

// minimalPkg is the reference function: an SQS handler that acknowledges
// every batch and does nothing else.
const minimalPkg = "./internal/bench/testdata/minimal"

// batchSize is the SQS batch the consumer handles for the RSS figure.
const batchSize = 10

// The cold-start goals of the issue: a bootstrap of at most 15 MB, and
// the first invocation served within 50 ms of the process's start.
const (
	maxBootstrap   = 15 << 20
	maxFirstInvoke = 50 * time.Millisecond
)

// Lambda measures the functions' bootstraps: sizes, time from process
// start to the first invocation served through the Runtime API, and peak
// RSS handling a batch of batchSize messages, each beside the minimal
// handler's built and run the same way.
func (r *Runner) Lambda(ctx context.Context, p LambdaParams) error {
	const scenario = "6 lambda"
	targets := []struct{ goos, goarch string }{{runtime.GOOS, runtime.GOARCH}}
	if p.Arm64 && (runtime.GOOS != "linux" || runtime.GOARCH != "arm64") {
		targets = append([]struct{ goos, goarch string }{{"linux", "arm64"}}, targets...)
	}
	host := map[string]string{}
	for _, tg := range targets {
		platform := tg.goos + "/" + tg.goarch
		sizes := map[string]int64{}
		for _, name := range []string{"coordinator", "consumer", "minimal"} {
			pkg := "./functions/" + name
			if name == "minimal" {
				pkg = minimalPkg
			}
			out := filepath.Join(p.WorkDir, tg.goos+"-"+tg.goarch, name, "bootstrap")
			r.logf("  build %s for %s", name, platform)
			size, err := buildBootstrap(ctx, p.ModuleDir, pkg, out, tg.goos, tg.goarch)
			if err != nil {
				return err
			}
			sizes[name] = size
			if tg.goos == runtime.GOOS && tg.goarch == runtime.GOARCH {
				host[name] = out
			}
		}
		for _, name := range []string{"coordinator", "consumer"} {
			r.add(Row{
				Scenario: scenario, Backend: "lambda", Figure: fmt.Sprintf("bootstrap size, %s, %s", name, platform),
				Value: float64(sizes[name]), Reference: float64(sizes["minimal"]), Unit: Bytes,
				RefText: "minimal aws-lambda-go SQS handler, same flags", Goal: AtMost(maxBootstrap, Bytes),
			})
		}
	}

	env, err := lambdaStack(ctx, p, r.Prefix)
	if err != nil {
		return err
	}
	defer env.closeFunc()

	nominal := time.Now().UTC().Truncate(time.Minute)
	trigger := func(at time.Time) []byte {
		return fmt.Appendf(nil, `{"job":%q,"scheduledTime":%q}`, fx.Name, at.Format(time.RFC3339))
	}
	r.logf("  coordinator cold start")
	coord, err := coldInvoke(ctx, host["coordinator"], env.vars, trigger(nominal), nil)
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	if !bytes.Contains(coord.body, []byte(`"opened"`)) {
		return fmt.Errorf("coordinator: unexpected response %s", coord.body)
	}
	// Two more ticks, so that the queue holds two batches: the consumer's
	// first, and the second it serves warm.
	for i := 1; i <= 2; i++ {
		if _, err := coldInvoke(ctx, host["coordinator"], env.vars, trigger(nominal.Add(-time.Duration(i)*time.Minute)), nil); err != nil {
			return fmt.Errorf("coordinator, tick %d: %w", i+1, err)
		}
	}
	event, err := env.batch(ctx, batchSize)
	if err != nil {
		return err
	}
	second, err := env.batch(ctx, batchSize)
	if err != nil {
		return err
	}
	r.logf("  consumer cold start with a %d-message batch, then a second batch warm", batchSize)
	cons, err := coldInvoke(ctx, host["consumer"], env.vars, event, second)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	if !bytes.Equal(bytes.TrimSpace(cons.body), []byte(`{"batchItemFailures":[]}`)) {
		return fmt.Errorf("consumer: unexpected response %s", cons.body)
	}
	r.logf("  minimal handler cold start with the same batch")
	minimal, err := coldInvoke(ctx, host["minimal"], env.vars, event, nil)
	if err != nil {
		return fmt.Errorf("minimal handler: %w", err)
	}

	platform := runtime.GOOS + "/" + runtime.GOARCH
	ref := fmt.Sprintf("minimal handler, given the %d-message event", batchSize)
	row := func(figure string, v, refV float64, u Unit) Row {
		return Row{Scenario: scenario, Backend: "lambda", Figure: figure + ", " + platform, Value: v, Reference: refV, RefText: ref, Unit: u}
	}
	goal := func(rw Row, g *Goal) Row { rw.Goal = g; return rw }
	firstInvoke := AtMost(maxFirstInvoke.Seconds(), Duration)
	r.add(
		row("coordinator: process start → first poll of the Runtime API (init)", coord.init.Seconds(), minimal.init.Seconds(), Duration),
		goal(row("coordinator: process start → first invocation served (a tick of the reference job)", coord.served.Seconds(), minimal.served.Seconds(), Duration), firstInvoke),
		row("consumer: process start → first poll of the Runtime API (init)", cons.init.Seconds(), minimal.init.Seconds(), Duration),
		goal(row(fmt.Sprintf("consumer: process start → first invocation served (%d-message batch)", batchSize), cons.served.Seconds(), minimal.served.Seconds(), Duration), firstInvoke),
		Row{Scenario: scenario, Backend: "lambda", Figure: fmt.Sprintf("consumer: the next %d-message batch, served warm by the same process, %s", batchSize, platform),
			Value: cons.warm.Seconds(), Reference: cons.served.Seconds(), Unit: Duration,
			RefText: "its first invocation, cold: what the warm batch does not take is the cold start's own share",
			Note:    fmt.Sprintf("cold − warm: %s", (cons.served - cons.warm).Round(10*time.Microsecond))},
		row(fmt.Sprintf("consumer: peak RSS (VmHWM) after a %d-message batch", batchSize), float64(cons.hwm), float64(minimal.hwm), Bytes),
		row("coordinator: peak RSS (VmHWM) after a tick", float64(coord.hwm), float64(minimal.hwm), Bytes),
	)
	return nil
}

// buildBootstrap builds pkg as the template builds the functions (static,
// no RPC, trimmed, stripped) and returns the binary's size.
func buildBootstrap(ctx context.Context, moduleDir, pkg, out, goos, goarch string) (int64, error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("build %s for %s/%s: %v\n%s", pkg, goos, goarch, err, b)
	}
	fi, err := os.Stat(out)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// coldRun is one process started to serve one invocation.
type coldRun struct {
	init   time.Duration // process start → first GET /next
	served time.Duration // process start → the invocation's response
	warm   time.Duration // the second invocation, queued once the first was answered → its response
	hwm    int64         // peak resident set, bytes, after the response
	body   []byte
}

// coldInvoke starts bin with env (and the Runtime API address), hands it
// payload as its first invocation, and measures it; with warm, it then
// hands the process warm as its second invocation and times it too.
func coldInvoke(ctx context.Context, bin string, env []string, payload, warm []byte) (coldRun, error) {
	api, err := lambdaruntime.Start("arn:aws:lambda:us-east-1:123456789012:function:baton-bench")
	if err != nil {
		return coldRun{}, err
	}
	defer api.Close()
	const timeout = time.Minute
	api.Next <- lambdaruntime.Invocation{ID: "bench-1", Payload: payload, Deadline: time.Now().Add(timeout)}

	out := tailbuf.New(16 << 10)
	cmd := exec.Command(bin)
	cmd.Env = append(append([]string(nil), env...), "AWS_LAMBDA_RUNTIME_API="+api.Addr)
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return coldRun{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	fail := func(err error) (coldRun, error) {
		return coldRun{}, fmt.Errorf("%w; output:\n%s", err, out.String())
	}

	var run coldRun
	select {
	case res := <-api.Answers:
		if res.Kind != "response" {
			return fail(fmt.Errorf("%s answered %s: %s", filepath.Base(filepath.Dir(bin)), res.Kind, res.Body))
		}
		run.served, run.body = res.At.Sub(start), res.Body
	case res := <-api.InitErrors:
		return fail(fmt.Errorf("%s answered %s: %s", filepath.Base(filepath.Dir(bin)), res.Kind, res.Body))
	case err := <-exited:
		exited <- err
		return fail(fmt.Errorf("exited before answering: %v", err))
	case <-time.After(timeout):
		return fail(errors.New("no answer"))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	select {
	case at := <-api.Polled:
		run.init = at.Sub(start)
	default:
		return fail(errors.New("answered without polling"))
	}
	hwm, err := peakRSS(cmd.Process.Pid)
	if err != nil {
		return fail(err)
	}
	run.hwm = hwm
	if warm == nil {
		return run, nil
	}
	sent := time.Now()
	api.Next <- lambdaruntime.Invocation{ID: "bench-2", Payload: warm, Deadline: sent.Add(timeout)}
	select {
	case res := <-api.Answers:
		if res.Kind != "response" {
			return fail(fmt.Errorf("%s answered its second invocation with %s: %s", filepath.Base(filepath.Dir(bin)), res.Kind, res.Body))
		}
		run.warm = res.At.Sub(sent)
	case err := <-exited:
		exited <- err
		return fail(fmt.Errorf("exited before answering its second invocation: %v", err))
	case <-time.After(timeout):
		return fail(errors.New("no answer to the second invocation"))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	return run, nil
}

// peakRSS reads the process's peak resident set size (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	v := procField(fmt.Sprintf("/proc/%d/status", pid), "VmHWM")
	kb, ok := strings.CutSuffix(v, " kB")
	if !ok {
		return 0, fmt.Errorf("no VmHWM in /proc/%d/status (%q)", pid, v)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(kb), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("VmHWM %q: %w", v, err)
	}
	return n << 10, nil
}

// lambdaEnv is the table and queues the functions work on, and their
// environment.
type lambdaEnv struct {
	vars      []string
	work      *awssqs.Queue
	closeFunc func()
}

// lambdaStack creates the table and queues and the functions' environment:
// endpoints, dummy credentials, nothing read from the machine's AWS
// configuration.
func lambdaStack(ctx context.Context, p LambdaParams, prefix string) (*lambdaEnv, error) {
	ddb := dynamodb.NewFromConfig(p.DynamoDB)
	sq := sqs.NewFromConfig(p.SQS)
	name := fmt.Sprintf("%slambda-%d", prefix, time.Now().UnixNano()%1e9)
	if err := awsdynamodb.CreateTable(ctx, ddb, name); err != nil {
		return nil, err
	}
	workURL, dlqURL, err := awssqs.EnsureQueues(ctx, sq, name, 5, 3*time.Minute)
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp(p.WorkDir, "home-")
	if err != nil {
		return nil, err
	}
	vars := []string{
		"AWS_LAMBDA_FUNCTION_NAME=baton-bench",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_REGION=" + p.DynamoDB.Region,
		"AWS_ACCESS_KEY_ID=bench",
		"AWS_SECRET_ACCESS_KEY=bench",
		"AWS_CONFIG_FILE=" + filepath.Join(home, "none"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "none"),
		"AWS_EC2_METADATA_DISABLED=true",
		"HOME=" + home,
		"AWS_ENDPOINT_URL_DYNAMODB=" + aws.ToString(p.DynamoDB.BaseEndpoint),
		"AWS_ENDPOINT_URL_SQS=" + aws.ToString(p.SQS.BaseEndpoint),
		"BATON_TABLE=" + name,
		"BATON_QUEUE_URL=" + workURL,
		"BATON_DLQ_URL=" + dlqURL,
		"BATON_MAX_RECEIVES=5",
	}
	return &lambdaEnv{
		vars: vars,
		work: awssqs.New(sq, workURL, nil),
		closeFunc: func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, _ = ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
			for _, u := range []string{workURL, dlqURL} {
				_, _ = sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
			}
			_ = os.RemoveAll(home)
		},
	}, nil
}

// batch receives n messages of the work queue and returns them as the SQS
// event source would hand them to the consumer.
func (e *lambdaEnv) batch(ctx context.Context, n int) ([]byte, error) {
	var ev events.SQSEvent
	for try := 0; len(ev.Records) < n && try < 20; try++ {
		ds, err := e.work.Receive(ctx, queue.ReceiveParams{Max: n - len(ev.Records), Visibility: 3 * time.Minute})
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			rec := events.SQSMessage{
				MessageId: d.MessageID, ReceiptHandle: d.ReceiptHandle, Body: string(d.Body), EventSource: "aws:sqs",
				Attributes: map[string]string{
					"ApproximateReceiveCount": strconv.Itoa(d.ReceiveCount),
					"SentTimestamp":           strconv.FormatInt(d.SentAt.UnixMilli(), 10),
				},
				MessageAttributes: map[string]events.SQSMessageAttribute{},
			}
			for k, v := range d.Attributes {
				rec.MessageAttributes[k] = events.SQSMessageAttribute{StringValue: aws.String(v), DataType: "String"}
			}
			ev.Records = append(ev.Records, rec)
		}
	}
	if len(ev.Records) < n {
		return nil, fmt.Errorf("the work queue holds %d messages, want %d", len(ev.Records), n)
	}
	return json.Marshal(ev)
}
