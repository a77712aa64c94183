package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/awssqs"
	"github.com/batonhq/baton/internal/lambdaruntime"
	"github.com/batonhq/baton/internal/queue"
	"github.com/batonhq/baton/internal/tailbuf"
)

// LambdaParams are the inputs of the Lambda artifact scenario.
type LambdaParams struct {
	// ModuleDir is baton's root: ./functions/<name> are built there.
	ModuleDir string
	// LabDir is the lab module's root: the minimal handler is built there.
	LabDir string
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
const minimalPkg = "./bench/testdata/minimal"

// batchSize is the SQS batch the consumer handles for the RSS figure.
const batchSize = 10

// The cold-start goals of the issue: a bootstrap of at most 15 MB, and
// the first invocation served within 50 ms of the process's start.
const (
	maxBootstrap   = 15 << 20
	maxFirstInvoke = 50 * time.Millisecond
	// maxColdShare bounds what a first invocation takes beyond the same
	// work served warm.
	maxColdShare = 10 * time.Millisecond
)

// coldStarts is how many consumer processes the cold share is the median
// of.
const coldStarts = 7

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
			dir, pkg := p.ModuleDir, "./functions/"+name
			if name == "minimal" {
				dir, pkg = p.LabDir, minimalPkg
			}
			out := filepath.Join(p.WorkDir, tg.goos+"-"+tg.goarch, name, "bootstrap")
			r.logf("  build %s for %s", name, platform)
			size, err := buildBootstrap(ctx, dir, pkg, out, tg.goos, tg.goarch)
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
	coord, err := coldInvoke(ctx, host["coordinator"], env, trigger(nominal), nil)
	if err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	if !bytes.Contains(coord.body, []byte(`"opened"`)) {
		return fmt.Errorf("coordinator: unexpected response %s", coord.body)
	}
	// Each consumer process serves a batch cold, then one warm, each of
	// ticks it has not seen (so that neither finds the other's runs in
	// its caches): four more ticks per process.
	for i := 1; i < 4*coldStarts; i++ {
		if _, err := coldInvoke(ctx, host["coordinator"], env, trigger(nominal.Add(-time.Duration(i)*time.Minute)), nil); err != nil {
			return fmt.Errorf("coordinator, tick %d: %w", i+1, err)
		}
	}
	batches, err := env.batches(ctx, batchSize, 2*coldStarts)
	if err != nil {
		return err
	}
	r.logf("  consumer: %d process starts, each a %d-message batch cold, then one warm", coldStarts, batchSize)
	var served, warm, share, init, callsCold, callsWarm, cpuShare, cpuCold []float64
	var cons coldRun
	for k := range coldStarts {
		run, err := coldInvoke(ctx, host["consumer"], env, batches[2*k], batches[2*k+1])
		if err != nil {
			return fmt.Errorf("consumer: %w", err)
		}
		if !bytes.Equal(bytes.TrimSpace(run.body), []byte(`{"batchItemFailures":[]}`)) {
			return fmt.Errorf("consumer: unexpected response %s", run.body)
		}
		served, warm = append(served, run.served.Seconds()), append(warm, run.warm.Seconds())
		share, init = append(share, (run.served-run.warm).Seconds()), append(init, run.init.Seconds())
		callsCold, callsWarm = append(callsCold, float64(run.calls)), append(callsWarm, float64(run.warmCalls))
		cpuShare, cpuCold = append(cpuShare, (run.cpu-run.warmCPU).Seconds()), append(cpuCold, run.cpu.Seconds())
		cons = run
	}
	r.logf("  minimal handler cold start with the same batch")
	minimal, err := coldInvoke(ctx, host["minimal"], env, batches[0], nil)
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
	medians := fmt.Sprintf("median of %d process starts", coldStarts)
	r.add(
		row("coordinator: process start → first poll of the Runtime API (init)", coord.init.Seconds(), minimal.init.Seconds(), Duration),
		goal(row("coordinator: process start → first invocation served (a tick of the reference job)", coord.served.Seconds(), minimal.served.Seconds(), Duration), firstInvoke),
		row("consumer: process start → first poll of the Runtime API (init)", median(init), minimal.init.Seconds(), Duration),
		goal(row(fmt.Sprintf("consumer: process start → first invocation served (%d-message batch)", batchSize), median(served), minimal.served.Seconds(), Duration), firstInvoke),
		Row{Scenario: scenario, Backend: "lambda", Figure: fmt.Sprintf("consumer: cold share (first invocation − the next %d-message batch, served warm by the same process), %s", batchSize, platform),
			Value: median(share), Reference: median(served), Unit: Duration, Goal: AtMost(maxColdShare.Seconds(), Duration),
			RefText: "the first invocation",
			Note:    fmt.Sprintf("%s; each %s; warm batch %s", medians, spread(share, time.Millisecond), (time.Duration(median(warm) * float64(time.Second))).Round(10*time.Microsecond))},
		Row{Scenario: scenario, Backend: "lambda", Figure: fmt.Sprintf("consumer: cold share on the CPU (the process's CPU time to its first response − the warm batch's), %s", platform),
			Value: median(cpuShare), Reference: median(cpuCold), Unit: Duration, Goal: AtMost(maxColdShare.Seconds(), Duration),
			RefText: "its CPU time to its first response, init included",
			Note:    fmt.Sprintf("%s; each %s; unlike the wall times, it does not move with the machine's load", medians, spread(cpuShare, time.Millisecond))},
		Row{Scenario: scenario, Backend: "lambda", Figure: fmt.Sprintf("consumer: DynamoDB and SQS calls of the first %d-message batch", batchSize),
			Value: median(callsCold), Reference: median(callsWarm), Unit: Count, RefText: "the warm batch's",
			Note: medians + ", counted by a proxy in front of the emulators"},
		row(fmt.Sprintf("consumer: peak RSS (VmHWM) after a %d-message batch", batchSize), float64(cons.hwm), float64(minimal.hwm), Bytes),
		row("coordinator: peak RSS (VmHWM) after a tick", float64(coord.hwm), float64(minimal.hwm), Bytes),
	)
	return nil
}

// spread lists v (seconds) in unit, as "a, b, c ms".
func spread(v []float64, unit time.Duration) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x/unit.Seconds(), 'f', 1, 64)
	}
	return strings.Join(parts, ", ") + " ms"
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
	// calls and warmCalls are the DynamoDB and SQS calls the process
	// made up to its first response, and for its second invocation.
	calls, warmCalls int64
	// cpu and warmCPU are the process's time on a CPU up to its first
	// response, and for its second invocation.
	cpu, warmCPU time.Duration
}

// coldInvoke starts bin with env (and the Runtime API address), hands it
// payload as its first invocation, and measures it; with warm, it then
// hands the process warm as its second invocation and times it too.
func coldInvoke(ctx context.Context, bin string, env *lambdaEnv, payload, warm []byte) (coldRun, error) {
	api, err := lambdaruntime.Start("arn:aws:lambda:us-east-1:123456789012:function:baton-bench")
	if err != nil {
		return coldRun{}, err
	}
	defer api.Close()
	const timeout = time.Minute
	api.Next <- lambdaruntime.Invocation{ID: "bench-1", Payload: payload, Deadline: time.Now().Add(timeout)}

	out := tailbuf.New(16 << 10)
	cmd := exec.Command(bin)
	cmd.Env = append(append([]string(nil), env.vars...), "AWS_LAMBDA_RUNTIME_API="+api.Addr)
	calls0 := env.calls.Load()
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
		run.calls = env.calls.Load() - calls0
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
	if run.cpu, err = cpuTime(cmd.Process.Pid); err != nil {
		return fail(err)
	}
	if warm == nil {
		return run, nil
	}
	sent, calls1 := time.Now(), env.calls.Load()
	api.Next <- lambdaruntime.Invocation{ID: "bench-2", Payload: warm, Deadline: sent.Add(timeout)}
	select {
	case res := <-api.Answers:
		if res.Kind != "response" {
			return fail(fmt.Errorf("%s answered its second invocation with %s: %s", filepath.Base(filepath.Dir(bin)), res.Kind, res.Body))
		}
		run.warm = res.At.Sub(sent)
		run.warmCalls = env.calls.Load() - calls1
		cpu, err := cpuTime(cmd.Process.Pid)
		if err != nil {
			return fail(err)
		}
		run.warmCPU = cpu - run.cpu
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

// cpuTime is the time the process's threads have spent on a CPU (the
// first field of each thread's schedstat, in nanoseconds): unlike a wall
// time, it does not move with the machine's load.
func cpuTime(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no schedstat for process %d: %v", pid, err)
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			return 0, err
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("%s: empty", t)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", t, err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
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
	calls     atomic.Int64 // requests through the proxies, from the functions
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
	// The functions reach the emulators through proxies that count their
	// calls (the bench's own calls go straight to the emulators).
	e := &lambdaEnv{work: awssqs.New(sq, workURL, nil)}
	ddbProxy, err := countingProxy(aws.ToString(p.DynamoDB.BaseEndpoint), &e.calls)
	if err != nil {
		return nil, err
	}
	sqsProxy, err := countingProxy(aws.ToString(p.SQS.BaseEndpoint), &e.calls)
	if err != nil {
		ddbProxy.Close()
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
		"AWS_ENDPOINT_URL_DYNAMODB=" + ddbProxy.URL,
		"AWS_ENDPOINT_URL_SQS=" + sqsProxy.URL,
		"BATON_TABLE=" + name,
		"BATON_QUEUE_URL=" + workURL,
		"BATON_DLQ_URL=" + dlqURL,
		"BATON_MAX_RECEIVES=5",
	}
	e.vars = vars
	e.closeFunc = func() {
		ddbProxy.Close()
		sqsProxy.Close()
		{
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, _ = ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
			for _, u := range []string{workURL, dlqURL} {
				_, _ = sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
			}
			_ = os.RemoveAll(home)
		}
	}
	return e, nil
}

// countingProxy serves a reverse proxy to target on a loopback port,
// adding each request to n.
func countingProxy(target string, n *atomic.Int64) (*httptest.Server, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("proxy to %q: %w", target, err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConns: idleConns, MaxIdleConnsPerHost: idleConns}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		rp.ServeHTTP(w, r)
	})), nil
}

// batches receives every message of the work queue and returns count
// events of n messages each as the SQS event source would hand them to
// the consumer, each made of two ticks no other event has: all of one's
// messages, then as many of the next's as fill it.
func (e *lambdaEnv) batches(ctx context.Context, n, count int) ([][]byte, error) {
	var all []events.SQSMessage
	for empty := 0; empty < 3; {
		ev, err := e.receive(ctx, queue.MaxBatch)
		if err != nil {
			return nil, err
		}
		if len(ev) == 0 {
			empty++
		}
		all = append(all, ev...)
	}
	byRun := map[string][]events.SQSMessage{}
	var runs []string
	for _, m := range all {
		var body struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal([]byte(m.Body), &body); err != nil {
			return nil, fmt.Errorf("message %s: %w", m.MessageId, err)
		}
		k, err := baton.ParseItemKey(body.Key)
		if err != nil {
			return nil, fmt.Errorf("message %s: %w", m.MessageId, err)
		}
		run := k.Run.String()
		if _, ok := byRun[run]; !ok {
			runs = append(runs, run)
		}
		byRun[run] = append(byRun[run], m)
	}
	if len(runs) < 2*count {
		return nil, fmt.Errorf("the work queue holds messages of %d ticks, want %d", len(runs), 2*count)
	}
	out := make([][]byte, count)
	for i := range out {
		recs := append(append([]events.SQSMessage(nil), byRun[runs[2*i]]...), byRun[runs[2*i+1]]...)
		if len(recs) < n {
			return nil, fmt.Errorf("ticks %s and %s have %d messages, want %d", runs[2*i], runs[2*i+1], len(recs), n)
		}
		b, err := json.Marshal(events.SQSEvent{Records: recs[:n]})
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// receive receives up to max messages of the work queue as the SQS event
// source's records.
func (e *lambdaEnv) receive(ctx context.Context, max int) ([]events.SQSMessage, error) {
	ds, err := e.work.Receive(ctx, queue.ReceiveParams{Max: max, Visibility: 3 * time.Minute})
	if err != nil {
		return nil, err
	}
	recs := make([]events.SQSMessage, 0, len(ds))
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
		recs = append(recs, rec)
	}
	return recs, nil
}
