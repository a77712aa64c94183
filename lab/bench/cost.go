package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Prices are AWS list prices in us-east-1, in dollars per unit.
type Prices struct {
	// AsOf says where the prices come from and when they were confirmed.
	AsOf string
	// DynamoDB on demand: a write request unit (1 KB), a read request
	// unit (4 KB strongly consistent; eventually consistent is half).
	WriteUnit, ReadUnit float64
	// SQS standard: a request (each 64 KB chunk of a payload is one).
	SQSRequest float64
	// Lambda: a request, and a GB-second on arm64.
	LambdaRequest, LambdaGBSecond float64
	// Step Functions: a Standard state transition; an Express request and
	// GB-second (billed in 64 MB and 100 ms steps).
	SFNTransition, SFNExpressRequest, SFNExpressGBSecond float64
}

// ListPrices are the prices the cost rows use: us-east-1, the first
// (lowest-volume) tier of each, no free tier, confirmed on 2026-11-27
// against stored copies of these pages:
//
//   - DynamoDB on demand, https://aws.amazon.com/dynamodb/pricing/on-demand/
//     (the units: a write request unit per started KB, a read request unit
//     per started 4 KB, half for an eventually consistent read). The
//     page's price table is filled in by the browser and was not in the
//     stored copy; $0.625 and $0.125 per million units are the figures of
//     https://airbyte.com/data-engineering-resources/dynamodb-pricing
//     (US East, on demand).
//   - SQS, https://aws.amazon.com/sqs/pricing/ was not found in the store;
//     $0.40 per million requests (Standard, first 100 billion a month),
//     every action a request, each 64 KB chunk of a payload one, empty
//     receives included: https://cloudburn.io/blog/amazon-sqs-pricing
//     (March 2026) and
//     https://www.factualminds.com/blog/amazon-sqs-pricing-64kb-rule-fifo-vs-standard/
//     (June 2026).
//   - Lambda, https://aws.amazon.com/lambda/pricing/ (duration rounded up
//     to 1 ms; CPU in proportion to memory): its price table is filled in
//     by the browser too; $0.20 per million requests and $0.0000133334 per
//     GB-second on Arm (first 7.5 billion GB-seconds a month):
//     https://cloudchipr.com/blog/aws-lambda-pricing.
//   - Step Functions, https://aws.amazon.com/step-functions/pricing/
//     (Standard: per state transition, retries included; Express: per
//     request and per duration rounded up to 100 ms, memory in 64 MB
//     steps): $25 per million transitions and $1.00 per million Express
//     requests from AWS's own
//     https://aws.amazon.com/blogs/compute/building-cost-effective-aws-step-functions-workflows/,
//     $0.00001667 per Express GB-second from
//     https://www.wring.co/blog/aws-step-functions-pricing-guide (March 2026).
var ListPrices = Prices{
	AsOf:               "us-east-1 list prices, confirmed 2026-11-27 (sources in lab/bench/cost.go and BENCHMARKS.md)",
	WriteUnit:          0.625 / 1e6,
	ReadUnit:           0.125 / 1e6,
	SQSRequest:         0.40 / 1e6,
	LambdaRequest:      0.20 / 1e6,
	LambdaGBSecond:     0.0000133334,
	SFNTransition:      25.0 / 1e6,
	SFNExpressRequest:  1.00 / 1e6,
	SFNExpressGBSecond: 0.00001667,
}

// FunctionMemoryMB is the functions' memory in template.yaml (Globals
// MemorySize 256), which Lambda's GB-seconds are billed at.
const FunctionMemoryMB = 256

// FunctionMemoryGB is FunctionMemoryMB in GB.
const FunctionMemoryGB = FunctionMemoryMB / 1024.0

// Latency is what the AWS estimate of a Lambda invocation's duration puts
// in place of the time it waited on the emulators.
type Latency struct {
	// PerCall is a call's latency, by SDK service ID; a service not
	// listed takes the largest.
	PerCall map[string]time.Duration
	// Why says where each figure comes from.
	Why string
	// VCPU is the share of a vCPU the function's memory buys: Lambda
	// allocates CPU in proportion to memory, one vCPU at 1,769 MB. The
	// invocation's own time, measured here on a full core, is divided by
	// it.
	VCPU float64
}

// AWSLatency is the latency the cost's goal line is judged at.
var AWSLatency = Latency{
	PerCall: map[string]time.Duration{"DynamoDB": 10 * time.Millisecond, "SQS": 20 * time.Millisecond},
	Why: "DynamoDB 10 ms a call, the top of the single-digit milliseconds AWS documents " +
		"(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html); " +
		"SQS 20 ms a call, an assumption: AWS's pages found give no latency for SQS",
	VCPU: FunctionMemoryMB / 1769.0, // https://docs.aws.amazon.com/lambda/latest/dg/resource-model.html
}

// Seconds is the time the invocations of t would take at l: each one's
// own time at the function's share of a vCPU, plus the calls of its
// longest chain of sequential calls at their latency, plus 1 ms for
// Lambda's rounding up.
func (l Latency) Seconds(t invocations) float64 {
	worst := time.Duration(0)
	for _, d := range l.PerCall {
		worst = max(worst, d)
	}
	wait := time.Duration(0)
	for svc, n := range t.Chain {
		d, ok := l.PerCall[svc]
		if !ok {
			d = worst
		}
		wait += time.Duration(n) * d
	}
	own := t.Own.Seconds()
	if l.VCPU > 0 {
		own /= l.VCPU
	}
	return own + wait.Seconds() + float64(t.N)*time.Millisecond.Seconds()
}

// Usage is what a run of Items items used, as measured.
type Usage struct {
	Items          int
	WriteUnits     float64
	ReadUnits      float64
	SQSRequests    int
	LambdaRequests int
	// LambdaSeconds is the invocations' billed duration, summed.
	LambdaSeconds       float64
	LambdaMemoryGB      float64
	SFNTransitions      float64
	SFNExpressRequests  float64
	SFNExpressGBSeconds float64
}

// CostLine is one part of a cost per million items.
type CostLine struct {
	Part    string
	Dollars float64 // per million items
}

// PerMillion returns u's cost per million items, part by part.
func (p Prices) PerMillion(u Usage) []CostLine {
	k := 1e6 / float64(u.Items)
	lines := []CostLine{
		{"DynamoDB writes", u.WriteUnits * p.WriteUnit * k},
		{"DynamoDB reads", u.ReadUnits * p.ReadUnit * k},
		{"SQS requests", float64(u.SQSRequests) * p.SQSRequest * k},
		{"Lambda requests", float64(u.LambdaRequests) * p.LambdaRequest * k},
		{"Lambda GB-seconds", u.LambdaSeconds * u.LambdaMemoryGB * p.LambdaGBSecond * k},
	}
	if u.SFNTransitions > 0 {
		lines = append(lines, CostLine{"Step Functions transitions", u.SFNTransitions * p.SFNTransition * k})
	}
	if u.SFNExpressRequests > 0 {
		lines = append(lines, CostLine{"Step Functions Express", (u.SFNExpressRequests*p.SFNExpressRequest + u.SFNExpressGBSeconds*p.SFNExpressGBSecond) * k})
	}
	return lines
}

// Sum is the total of lines.
func Sum(lines []CostLine) float64 {
	var s float64
	for _, l := range lines {
		s += l.Dollars
	}
	return s
}

func describeCost(lines []CostLine) string {
	parts := make([]string, 0, len(lines))
	for _, l := range lines {
		if l.Dollars > 0 {
			parts = append(parts, fmt.Sprintf("%s $%.3f", l.Part, l.Dollars))
		}
	}
	return strings.Join(parts, ", ")
}

// BatonUsage is the usage of a measured run: the proxy's write and read
// units, the SQS requests as billed, one Lambda request per consumer
// batch plus the coordinator's invocation, and their duration at the
// template's memory: as measured on the emulators (lat nil), or at the
// latency lat.
func BatonUsage(run awsRun, lat *Latency) Usage {
	secs := run.timed.Billed.Seconds()
	if lat != nil {
		secs = lat.Seconds(run.timed)
	}
	return Usage{
		Items: run.n, WriteUnits: run.stats.WriteUnits, ReadUnits: run.stats.ReadUnits, SQSRequests: run.sqsRequests,
		LambdaRequests: run.timed.N, LambdaSeconds: secs, LambdaMemoryGB: FunctionMemoryGB,
	}
}

// Anchor is the same work done another way, priced with the same prices.
type Anchor struct {
	Name, Formula string
	Usage         Usage
}

// Anchors are the same work done other ways, each usage derived from
// baton's measured one (u) by its formula.
func Anchors(u Usage) []Anchor {
	n := float64(u.Items)
	// The work's own Lambda requests and time, without baton: the same
	// invocations, the same GB-seconds.
	work := u
	work.WriteUnits, work.ReadUnits = 0, 0
	sfnStd := work
	sfnStd.SQSRequests = 0
	sfnStd.SFNTransitions = 2 * n // per item: its Task state entered and left
	sfnExp := work
	sfnExp.SQSRequests = 0
	sfnExp.SFNTransitions = n / 10 // the parent map run: about one transition per child execution of 10 items
	sfnExp.SFNExpressRequests = n / 10
	sfnExp.SFNExpressGBSeconds = n / 10 * 0.1 * 0.0625 // a child: at least 100 ms at 64 MB
	pt := work
	pt.WriteUnits = 2 * n // per item: a conditional put (IN_PROGRESS) and an update (COMPLETED)
	return []Anchor{
		{"Step Functions Distributed Map, Standard child workflows", "2 state transitions per item (its Task state), the work's Lambda requests and GB-seconds as baton's; no SQS, no DynamoDB", sfnStd},
		{"Step Functions Distributed Map, Express child workflows of 10 items", "per 10 items: 1 Express request of at least 100 ms at 64 MB and ~1 transition of the parent map run; the work's Lambda as baton's", sfnExp},
		{"SQS + Lambda + Powertools idempotency", "per item: 2 DynamoDB writes (conditional put IN_PROGRESS, update COMPLETED); the same SQS requests and Lambda as baton's; no coordinator, no settling", pt},
	}
}

// sqsBreakdown lists the SQS operations of calls per item.
func sqsBreakdown(calls map[string]int, n int) string {
	sq := map[string]int{}
	for op, c := range calls {
		if slices.Contains(sqsOps, op) {
			sq[op] = c
		}
	}
	return perItem(sq, n)
}

// sqsOps are the SQS operations baton's queue adapter calls.
var sqsOps = []string{"SendMessage", "SendMessageBatch", "ReceiveMessage", "DeleteMessage", "DeleteMessageBatch",
	"ChangeMessageVisibility", "ChangeMessageVisibilityBatch"}

// costMode is how the items of a measured run were processed: one item
// message each (per-item mode), or shard by shard in place (bulk mode,
// baton.Job.Bulk).
type costMode struct {
	Name string // "per-item mode", "bulk mode"
	// Judged: the mode's figure at AWS latency is the goal line.
	Judged bool
	// Anchors: the other ways of doing the work are priced from this
	// mode's counts.
	Anchors bool
}

// The modes the cost scenario measures: the goal line judges bulk mode,
// the way a job of many no-op items is meant to run; per-item mode is
// kept beside it.
var (
	perItemMode = costMode{Name: "per-item mode", Anchors: true}
	bulkMode    = costMode{Name: "bulk mode (Job.Bulk: shards run in place)", Judged: true}
)

// addCost adds the cost rows of a measured run processed in mode.
func (r *Runner) addCost(backend string, run awsRun, mode costMode) {
	const scenario = "9 cost"
	lat := AWSLatency
	atAWS, measured := BatonUsage(run, &lat), BatonUsage(run, nil)
	baton, upper := ListPrices.PerMillion(atAWS), ListPrices.PerMillion(measured)
	r.logf("  cost, %s: $%.3f per million items at DynamoDB/SQS latency (%s), $%.3f with the emulators' time",
		mode.Name, Sum(baton), describeCost(baton), Sum(upper))
	sz := number(float64(run.n))
	perInv := func(d float64) float64 { return d / float64(max(1, run.timed.N)) }
	ownMs := perInv(run.timed.Own.Seconds()) * 1e3
	judged := Row{Scenario: scenario, Backend: backend,
		Figure: fmt.Sprintf("baton, %s, all-in $ per million no-op items, Lambda time at DynamoDB/SQS latency (counts of %s items)", mode.Name, sz), Value: Sum(baton), Unit: Count,
		Reference: 1.5, RefText: "the issue's goal, $1.50",
		Note: describeCost(baton) + fmt.Sprintf("; SQS %.3f requests per item as billed (%s)", float64(run.sqsRequests)/float64(run.n), sqsBreakdown(run.calls, run.n))}
	wu := Row{Scenario: scenario, Backend: backend,
		Figure: fmt.Sprintf("baton, %s, write units per item", mode.Name), Value: atAWS.WriteUnits / float64(atAWS.Items), Unit: Count,
		Reference: 0.5, RefText: "the stretch goal: claims and completions in groups"}
	if mode.Judged {
		judged.Goal, wu.Goal = AtMost(1.5, Count), AtMost(0.5, Count)
		judged.Note = "the goal line; " + judged.Note
	}
	r.add(
		judged,
		Row{Scenario: scenario, Backend: backend,
			Figure: fmt.Sprintf("baton, %s, all-in $ per million no-op items, Lambda time as measured on the emulators (an upper bound)", mode.Name), Value: Sum(upper), Unit: Count,
			Reference: 1.5, RefText: "the issue's goal, $1.50", Note: describeCost(upper)},
		Row{Scenario: scenario, Backend: backend,
			Figure: fmt.Sprintf("baton, %s, Lambda duration per invocation at DynamoDB/SQS latency (%d invocations: consumer batches + the coordinator)", mode.Name, run.timed.N),
			Value:  perInv(lat.Seconds(run.timed)), Unit: Duration,
			Reference: perInv(run.timed.Billed.Seconds()), RefText: "as measured on the emulators (each invocation rounded up to 1 ms)",
			Note: fmt.Sprintf("own time %.2f ms ÷ %.3f vCPU at %d MB + the longest chain of sequential calls, %s, + 1 ms rounding; %s",
				ownMs, lat.VCPU, FunctionMemoryMB, chainText(run.timed), lat.Why)},
		wu,
		Row{Scenario: scenario, Backend: backend,
			Figure: fmt.Sprintf("baton, %s, SQS requests per item as billed", mode.Name), Value: float64(run.sqsRequests) / float64(run.n), Unit: Count,
			Reference: 0, RefText: "—", Note: sqsBreakdown(run.calls, run.n)},
		Row{Scenario: scenario, Backend: backend,
			Figure: fmt.Sprintf("baton, %s, Lambda requests per million items", mode.Name), Value: float64(run.timed.N) * 1e6 / float64(run.n), Unit: Count,
			Reference: 0, RefText: "—", Note: fmt.Sprintf("%d invocations: consumer batches + the coordinator; %.4f GB-seconds per thousand items at DynamoDB/SQS latency",
				run.timed.N, atAWS.LambdaSeconds*atAWS.LambdaMemoryGB*1e3/float64(run.n))},
	)
	if !mode.Anchors {
		return
	}
	for _, a := range Anchors(atAWS) {
		lines := ListPrices.PerMillion(a.Usage)
		r.add(Row{Scenario: scenario, Backend: backend, Figure: a.Name + ", $ per million items", Value: Sum(lines), Unit: Count,
			Reference: Sum(baton), RefText: "baton, " + mode.Name + ", Lambda at DynamoDB/SQS latency", Note: a.Formula + ": " + describeCost(lines)})
	}
}

// chainText says how many calls of each service the chains held per
// invocation.
func chainText(t invocations) string {
	svcs := make([]string, 0, len(t.Chain))
	for s := range t.Chain {
		svcs = append(svcs, s)
	}
	slices.Sort(svcs)
	parts := make([]string, 0, len(svcs))
	for _, s := range svcs {
		parts = append(parts, fmt.Sprintf("%.2f %s of %.1f", float64(t.Chain[s])/float64(max(1, t.N)), s, float64(t.Calls[s])/float64(max(1, t.N))))
	}
	if len(parts) == 0 {
		return "no calls"
	}
	return strings.Join(parts, " and ") + " calls per invocation"
}
