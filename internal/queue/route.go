package queue

import (
	"context"
	"errors"
	"strings"
)

// AttrKey is the message attribute naming the item key ("job@…/asset");
// package message sets it on every item message.
const AttrKey = "baton-key"

// ByJob returns a Sender that sends each message to the queue of its job
// (routes[job], the job read from the message's AttrKey attribute) and
// every other message to def. A batch spread over several queues is sent
// as one call per queue; their entry failures are merged into one
// *BatchError, and a queue's whole-call failure fails the call (some
// entries may have been sent, as SendBatch allows). With no routes it
// returns def itself.
//
// The core sends through it unchanged: a job with a queue of its own
// (baton.Job.Queue) has its fan-out and its fan-in enqueued there.
func ByJob(def Sender, routes map[string]Sender) Sender {
	if len(routes) == 0 {
		return def
	}
	return &byJob{def: def, routes: routes}
}

type byJob struct {
	def    Sender
	routes map[string]Sender
}

func (r *byJob) target(m Message) Sender {
	// A tick's key is job@time#gen/asset, a submission's job+key#gen/asset.
	key := m.Attributes[AttrKey]
	i := strings.IndexAny(key, "@+")
	ok := i > 0
	job := key[:max(i, 0)]
	if s, found := r.routes[job]; ok && found {
		return s
	}
	return r.def
}

func (r *byJob) SendBatch(ctx context.Context, msgs []Message) error {
	groups := map[Sender][]Message{}
	var order []Sender
	for _, m := range msgs {
		s := r.target(m)
		if _, seen := groups[s]; !seen {
			order = append(order, s)
		}
		groups[s] = append(groups[s], m)
	}
	if len(order) == 1 {
		return order[0].SendBatch(ctx, msgs)
	}
	var failed []EntryError
	var errs []error
	for _, s := range order {
		err := s.SendBatch(ctx, groups[s])
		var be *BatchError
		switch {
		case err == nil:
		case errors.As(err, &be):
			failed = append(failed, be.Failed...)
		default:
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(failed) > 0 {
		return &BatchError{Failed: failed}
	}
	return nil
}

// ReceivedFrom returns what a consumer of queue from sends through: the
// router's SendBatch (fan-in to each job's queue), with from's
// ChangeVisibility (heartbeats extend a message on the queue it was
// received from) when from has it.
func ReceivedFrom(router, from Sender) Sender {
	if router == from {
		return from
	}
	if vc, ok := from.(VisibilityChanger); ok {
		return sendVia{Sender: router, vc: vc}
	}
	return router
}

type sendVia struct {
	Sender
	vc VisibilityChanger
}

func (s sendVia) ChangeVisibility(ctx context.Context, p ChangeVisibilityParams) error {
	return s.vc.ChangeVisibility(ctx, p)
}
