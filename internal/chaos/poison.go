package chaos

import (
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/examples/fx"
	"github.com/batonhq/baton/internal/message"
	"github.com/batonhq/baton/internal/queue"
)

// attrPoison marks a poison message with its id; attrStale marks a stale
// copy of an old generation's message. The consumer keeps a message's
// attributes when it dead-letters it.
const (
	attrPoison = "chaos-poison"
	attrStale  = "chaos-stale"
)

// Poison kinds: every way the consumer must turn a message away.
var poisonKinds = []string{
	"malformed-json",          // not JSON
	"wrong-version",           // a version this code does not write
	"unknown-job",             // a job the catalog does not have
	"unknown-asset",           // an asset the job does not have
	"generation-never-opened", // a generation of the tick no coordinator opened
	"future-tick",             // a tick after now (beyond the clock-skew allowance)
	"tick-without-run",        // a tick no coordinator ran
	"fence-never-recorded",    // a fence above any the run recorded
}

// poison returns the n-th poison message, of kind poisonKinds[n mod len],
// about the tick nominal (one that has or will have a run, and that no
// replay moves on: see Run) where its kind needs one.
func poison(n int, nominal, now time.Time) queue.Message {
	id := "p" + strconv.Itoa(n)
	key := func(job string, nominal time.Time, gen int, asset string) string {
		return baton.ItemKey{Run: baton.RunID{Job: job, Nominal: nominal.UTC(), Generation: gen}, Asset: asset}.String()
	}
	body := func(k string, fence int64) []byte {
		return message.Message{Version: message.Version1, Key: k, Fence: fence}.Encode()
	}
	var b []byte
	switch kind := poisonKinds[n%len(poisonKinds)]; kind {
	case "malformed-json":
		b = []byte(`{"v":1,"key":"` + id)
	case "wrong-version":
		b = fmt.Appendf(nil, `{"v":99,"key":%q,"fence":1}`, key(fx.Name, nominal, 1, "EURUSD"))
	case "unknown-job":
		b = body(key("nojob", nominal, 1, "EURUSD"), 1)
	case "unknown-asset":
		b = body(key(fx.Name, nominal, 1, "BTCUSD"), 1)
	case "generation-never-opened":
		b = body(key(fx.Name, nominal, 900+n, "EURUSD"), 1)
	case "future-tick":
		b = body(key(fx.Name, now.Add(24*time.Hour).Truncate(time.Minute), 1, "EURUSD"), 1)
	case "tick-without-run":
		b = body(key(fx.Name, nominal.Add(-7*24*time.Hour), 1, "EURUSD"), 1)
	case "fence-never-recorded":
		b = body(key(fx.Name, nominal, 1, "GBPUSD"), 1<<40)
	}
	return queue.Message{Body: b, Attributes: map[string]string{attrPoison: id}}
}

// staleCopy returns a copy of the message of asset in generation gen of
// the tick: what a redelivery of an old generation's message looks like.
func staleCopy(nominal time.Time, gen int, asset string) queue.Message {
	key := baton.ItemKey{Run: baton.RunID{Job: fx.Name, Nominal: nominal.UTC(), Generation: gen}, Asset: asset}
	m := message.New(key, 1, false).QueueMessage()
	m.Attributes[attrStale] = "1"
	return m
}
