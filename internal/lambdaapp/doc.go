// Package lambdaapp wires baton's core to AWS Lambda: configuration from
// the environment, the typed handlers of the coordinator and consumer
// functions, structured logs and metrics. The mains in functions/ only
// call it.
//
// # Handlers
//
// CoordinatorHandler.Handle takes the raw trigger (see package
// lambdaevent for the accepted shapes) and returns a CoordinatorResponse.
// Lease contention is not an error (outcome "skipped"). A fan-out stopped
// by the deadline before its end is an error (ErrIncomplete), so that
// Lambda's asynchronous retry resumes the run from its cursor; the run is
// left resumable either way.
//
// ConsumerHandler.Handle takes an SQS event and returns the batch-item
// failures; it never fails the batch as a whole. Records that cannot be
// translated are reported as failures, never dropped.
//
// Both handlers work on injected stores and queues (HandlerParams), so that
// the operator CLI can run them in-process on the embedded store:
//
//	h, err := lambdaapp.NewCoordinatorHandler(lambdaapp.HandlerParams{
//		Jobs: catalog, Leases: b.Leases, Ledger: b.Ledger, Queue: b.Work, …})
//	ctx, cancel := context.WithTimeout(ctx, time.Minute) // the deadline Lambda would set
//	out, err := lambda.NewHandler(h.Handle).Invoke(ctx, payload)
//
// Each handler builds its core once, at construction, with package exec
// (exec.Build: the coordinator or the consumer, the job-queue router, the
// chain starter, the caches); an invocation only sets its owner, logger
// and deadline. The coordinator's response and its retry decision are
// exec's (exec.CoordinatorResponse, exec.Incomplete), shared with HTTP.
//
// NewCoordinatorFromEnv and NewConsumerFromEnv build them on DynamoDB and
// SQS from the function's environment at cold start (ParamsOnAWS for other
// callers with their own clients).
//
// EventSource stands in for Lambda's SQS event source outside Lambda: given
// to a poller, it invokes the consumer handler once per received batch, the
// batch as an events.SQSEvent, and returns the batch-item failures.
//
// # Invocation
//
// The owner of the lease and of the item claims is the function name and
// the request id (lambdacontext), unique per invocation. The invocation
// deadline (ctx.Deadline) bounds the coordinator's lease and fan-out and
// the consumer's item leases; it is passed to the core on the handler's
// clock (HandlerParams.NowFunc plus the time left), so that a test clock
// and a real deadline agree.
//
// # Observability
//
// Logs are JSON lines shaped as AWS Lambda Powertools shapes them (package
// jsonlog): timestamp, level, message, then on every line of an
// invocation service (HandlerParams.Service, BATON_SERVICE_NAME),
// cold_start, function_name, function_request_id and xray_trace_id, then
// baton's own keys: job, run, key, asset, phase, fence, attempt, status.
// Durations are milliseconds (key suffix _ms). The consumer writes one
// INFO line per item ("item"); the core's per-item lines are DEBUG.
// Payloads, results and secrets are never written. The level is
// BATON_LOG_LEVEL, never below AWS_LAMBDA_LOG_LEVEL (Lambda's own filter).
//
// Metrics are CloudWatch Embedded Metric Format records (package emf) in
// HandlerParams.Namespace (BATON_METRICS_NAMESPACE, default Baton) with
// the dimensions Job and Service, so that two stacks never merge:
// LeaseContention, AcquireLatency, ItemsEnqueued, RunsOpened (1 when the
// outcome is opened, else 0), CoordinatorDuration (coordinator);
// ItemsSucceeded, ItemsFailed, ItemsDuplicate, ItemsDead, ItemsDeadLettered,
// ItemsSuperseded (messages of a generation a forced replay superseded,
// acknowledged without effect), ItemsCancelled (cancelled by this
// invocation: a derived item whose input ended without success, or an item
// cancelled while its processor ran), ItemsOverBudget (not started: the
// job's RunBudget had passed; CANCELLED), TickToDone (consumer). The first
// invocation of a handler in a process also writes ColdStart (1) with the
// dimensions function_name and service, as Powertools does.
//
// # Why a package apart from batonlambda
//
// batonlambda is the public face (a catalog in, Lambda's Start out) and
// stays that thin. The handlers live here because they work on injected
// stores and queues of internal types (ledger.Store, lease.Store,
// queue.Sender: HandlerParams): the CLI (`baton invoke`, the replay
// event) runs them in-process on any engine, the template's tests and the
// end-to-end tests on the emulators.
// Folded into batonlambda, those parameters would have to be exported by
// a public package, whose API would then carry the internal ports.
package lambdaapp
