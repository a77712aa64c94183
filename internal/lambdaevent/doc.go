// Package lambdaevent translates AWS Lambda event payloads into baton's
// cloud-neutral inputs and baton's results back into Lambda responses. It
// holds no core logic: it decodes, validates and names what is wrong.
//
// # Coordinator input
//
// DecodeTrigger accepts four shapes, told apart by their fields; every
// one names a job of the deployment's catalog (TriggerParams.Jobs):
//
//   - The EventBridge rule event ("source": "aws.events", "detail-type":
//     "Scheduled Event"). Its "time" is the trigger time. A scheduled rule
//     event carries no job: it is accepted only when the catalog has
//     exactly one job, which it then is, unless the event's "detail"
//     object has a "job" field (events put on a bus by hand may carry
//     one). The rule ARN in "resources" is not used to find the job:
//     CloudFormation names rules with a random suffix, so the name says
//     nothing reliable; it is kept in Trigger.Resources for the logs.
//   - A rule's constant input {"job": "fx"}: the rule's target replaces the
//     event by it, so it carries no time; the trigger time is the
//     invocation's own (TriggerParams.Now), mapped to the latest tick at or
//     before it like any other.
//   - The EventBridge Scheduler payload {"job": "fx", "scheduledTime":
//     "<aws.scheduler.scheduled-time>"}, set as the schedule target's Input.
//   - A manual replay {"job": "fx", "scheduledTime": "…", "force": true|false},
//     written by an operator (baton invoke, aws lambda invoke).
//
// Anything else is an error wrapping ErrBadTrigger that names the problem:
// an unknown shape or field, a missing field, a time that does not parse,
// a job the catalog does not hold (the error lists those it holds), a rule
// event without a job when the catalog has several, or a time further in
// the future than the skew allowance.
//
// # Consumer input and output
//
// Deliveries turns an events.SQSEvent into queue deliveries (receive count,
// sent time and string message attributes included); a record whose
// system attributes do not parse is returned as a RecordError so that the
// handler reports it as a batch-item failure instead of dropping it (a
// record without a message id yields an empty item identifier, which Lambda
// treats as the failure of the whole batch: still nothing is dropped).
// ConsumerResponse builds the events.SQSEventResponse from the consumer's
// verdict: its failed messages and the untranslated records are reported,
// everything else (processed, duplicate, dead-lettered with its reason) is
// acknowledged.
//
// SQSEvent goes the other way, for what stands in for Lambda's event source
// outside Lambda: it builds the event the event source would deliver for
// messages received from a queue.
package lambdaevent
