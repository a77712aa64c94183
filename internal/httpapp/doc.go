// Package httpapp serves baton's coordinator and consumer over HTTP, for
// container platforms (Cloud Run, Knative, Azure Container Apps, a plain
// Kubernetes Deployment): the machinery behind package batonhttp and
// `baton serve`. It works on any engine's backend.Backend.
//
// # Endpoints
//
//   - POST / (and /trigger): the coordinator. A CloudEvent in binary or
//     structured mode (a Knative PingSource tick, an Eventarc event) or a
//     plain JSON trigger (the Lambda coordinator's shapes, such as a Cloud
//     Scheduler HTTP job's body {"job"}), decoded strictly
//     (DecodeTriggerRequest).
//   - POST /push: one work message pushed as a CloudEvent
//     (DecodePushRequest), processed by the same consumer as pulled ones.
//   - GET /healthz: liveness. GET /readyz: the backend's ledger answers.
//
// Work endpoints verify their caller (Auth: an OIDC token checked against
// the issuer's keys, audience and optionally the caller's email, or a
// shared secret compared in constant time); with nothing configured they
// serve loopback callers only. Refusals are JSON {"error": "..."}, with a
// status that tells a retrying sender what to do: 400 and 401 are final,
// 503 and 500 are to be retried.
//
// # Pull workers and stopping
//
// RunWorkers polls the backend's work queue with the local runtime's poller, as
// `baton run` does. Serve runs the endpoints and the workers; when its
// context ends (SIGTERM) it stops taking work, lets what is in flight
// finish for a grace period, then gives back what is left: the consumer's
// Stop releases the claims (ledger Release) and the messages become
// visible again (pulled) or are answered 503 (pushed).
//
// # Heartbeats
//
// A processor's heartbeats (baton.Task.Claim) extend its item's claim in
// the ledger whichever way the message came. A pulled message's
// visibility is extended with it; a pushed one is not in the engine's
// queue, so the push system's acknowledgement deadline must exceed
// Params.Timeout, which bounds the request (and so the claim).
//
// # The core
//
// Each endpoint builds its core once, at construction, with package exec
// (exec.Build on Params.Backend: the coordinator or the push consumer, the
// job-queue router, the chain starter, the caches), and the routes of
// one mux (NewMux, batonhttp.NewHandler) share one core; a request only
// sets its owner. The coordinator endpoint's 200 body is exec's
// CoordinatorResponse, the Lambda coordinator's response with the
// CloudEvent's identity, and its 503 is exec's retry decision
// (exec.Incomplete).
//
// # Why a package apart from batonhttp
//
// batonhttp is the public face (options in, handlers and Serve out) and
// stays that thin. The handlers live here because `baton serve` and the
// tests run them on any engine's backend.Backend, an internal type: a
// public package would have to export it, with every port it holds.
package httpapp
