package bench

import (
	"fmt"
	"strings"
)

// Prices are AWS list prices in us-east-1, in dollars per unit.
type Prices struct {
	// AsOf says where the prices come from and when they were taken.
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

// ListPrices are the prices the cost rows use.
var ListPrices = Prices{
	AsOf: "us-east-1 list prices as of 2026-11, as stated in the issue (Step Functions Express " +
		"from AWS's published rates); not confirmed against AWS's pricing pages from this machine",
	WriteUnit:          0.625 / 1e6,
	ReadUnit:           0.125 / 1e6,
	SQSRequest:         0.40 / 1e6,
	LambdaRequest:      0.20 / 1e6,
	LambdaGBSecond:     0.0000133334,
	SFNTransition:      25.0 / 1e6,
	SFNExpressRequest:  1.00 / 1e6,
	SFNExpressGBSecond: 0.00001667,
}

// FunctionMemoryGB is the functions' memory in template.yaml (Globals
// MemorySize 256), which Lambda's GB-seconds are billed at.
const FunctionMemoryGB = 0.25

// Usage is what a run of Items items used, as measured.
type Usage struct {
	Items               int
	WriteUnits          float64
	ReadUnits           float64
	SQSRequests         int
	LambdaRequests      int
	LambdaSeconds       float64 // summed over invocations
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

// sqsOps are the SQS operations billed as requests.
var sqsOps = []string{"SendMessage", "SendMessageBatch", "ReceiveMessage", "DeleteMessage", "DeleteMessageBatch",
	"ChangeMessageVisibility", "ChangeMessageVisibilityBatch"}

// BatonUsage is the usage of a measured run: the proxy's write and read
// units, the SQS requests counted, one Lambda request per consumer batch
// plus the coordinator's, and the time they took at the template's
// memory.
func BatonUsage(run awsRun) Usage {
	sqsReq := 0
	for _, op := range sqsOps {
		sqsReq += run.calls[op]
	}
	return Usage{
		Items: run.n, WriteUnits: run.stats.WriteUnits, ReadUnits: run.stats.ReadUnits, SQSRequests: sqsReq,
		LambdaRequests: run.batches + 1, LambdaSeconds: (run.busy + run.coordinator).Seconds(), LambdaMemoryGB: FunctionMemoryGB,
	}
}

// Anchors are the same work done another way, priced with the same
// prices: each usage derived from baton's measured one (u) by its formula.
func Anchors(u Usage) []struct {
	Name, Formula string
	Usage         Usage
} {
	n := float64(u.Items)
	// The work's own Lambda requests and time, without baton: one
	// invocation per batch of ten items, the same GB-seconds.
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
	return []struct {
		Name, Formula string
		Usage         Usage
	}{
		{"Step Functions Distributed Map, Standard child workflows", "2 state transitions per item (its Task state), the work's Lambda requests and GB-seconds as measured; no SQS, no DynamoDB", sfnStd},
		{"Step Functions Distributed Map, Express child workflows of 10 items", "per 10 items: 1 Express request of at least 100 ms at 64 MB and ~1 transition of the parent map run; the work's Lambda as measured", sfnExp},
		{"SQS + Lambda + Powertools idempotency", "per item: 2 DynamoDB writes (conditional put IN_PROGRESS, update COMPLETED); the same SQS requests and Lambda as measured; no coordinator, no settling", pt},
	}
}

// addCost adds the cost rows of a measured run.
func (r *Runner) addCost(backend string, run awsRun) {
	const scenario = "9 cost"
	u := BatonUsage(run)
	baton := ListPrices.PerMillion(u)
	sz := number(float64(run.n))
	r.add(Row{Scenario: scenario, Backend: backend,
		Figure: fmt.Sprintf("baton, all-in $ per million no-op items (measured over %s items)", sz), Value: Sum(baton), Unit: Count,
		Reference: 1.5, RefText: "the issue's goal, $1.50", Goal: AtMost(1.5, Count), Note: describeCost(baton)})
	r.add(Row{Scenario: scenario, Backend: backend,
		Figure: "baton, write units per item", Value: u.WriteUnits / float64(u.Items), Unit: Count,
		Reference: 0.5, RefText: "the stretch goal: claims and completions in groups", Goal: AtMost(0.5, Count)})
	for _, a := range Anchors(u) {
		lines := ListPrices.PerMillion(a.Usage)
		r.add(Row{Scenario: scenario, Backend: backend, Figure: a.Name + ", $ per million items", Value: Sum(lines), Unit: Count,
			Reference: Sum(baton), RefText: "baton, as measured", Note: a.Formula + ": " + describeCost(lines)})
	}
}
