package ddbthrottle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// idleConns is the idle connections the proxy keeps to its target.
const idleConns = 256

// DynamoDB's per-partition-key limits.
const (
	DefaultWriteUnits = 1000 // write units per second per partition key value
	DefaultReadUnits  = 3000 // read units per second per partition key value
)

// Options configure a Proxy. The zero value is DynamoDB's limits on the
// wall clock with partition key attribute "pk".
type Options struct {
	WriteUnits   float64          // per second per partition; 0: DefaultWriteUnits
	ReadUnits    float64          // per second per partition; 0: DefaultReadUnits
	PartitionKey string           // the tables' partition key attribute; "": "pk"
	Now          func() time.Time // the clock of the one-second windows; nil: time.Now
}

// Proxy forwards DynamoDB requests to a target server, throttling those
// that would take a partition key past its limits. It may serve requests
// concurrently.
type Proxy struct {
	opts  Options
	proxy *httputil.ReverseProxy

	mu    sync.Mutex
	parts map[string]*partition
	// unreachable counts requests the target did not answer (answered
	// 502 Bad Gateway, which the SDK retries).
	unreachable int
}

// partition is the accounting of one partition key value.
type partition struct {
	table, key     string
	second         int64   // the current window (Unix seconds)
	wUsed, rUsed   float64 // units used in the current window
	wPeak, rPeak   float64 // the most units used in any one window
	wTotal, rTotal float64
	wThrot, rThrot int
}

// New returns a proxy in front of target (a DynamoDB endpoint URL).
func New(target string, opts *Options) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("ddbthrottle: target %q is not an absolute URL", target)
	}
	p := &Proxy{parts: map[string]*partition{}}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.WriteUnits <= 0 {
		p.opts.WriteUnits = DefaultWriteUnits
	}
	if p.opts.ReadUnits <= 0 {
		p.opts.ReadUnits = DefaultReadUnits
	}
	if p.opts.PartitionKey == "" {
		p.opts.PartitionKey = "pk"
	}
	if p.opts.Now == nil {
		p.opts.Now = time.Now
	}
	p.proxy = httputil.NewSingleHostReverseProxy(u)
	// Keep as many idle connections to the target as clients may keep
	// requests in flight: the default (2 per host) would open and close a
	// connection for nearly every request of a busy benchmark, which a
	// single-threaded emulator answers with resets.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = idleConns, idleConns
	p.proxy.Transport = tr
	p.proxy.ModifyResponse = p.onResponse
	p.proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		p.mu.Lock()
		p.unreachable++
		p.mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
	}
	return p, nil
}

// ctxKey carries what the response needs to be charged.
type ctxKey struct{}

type pending struct {
	op         string
	table      string
	pk         string // the partition of a read charged after the response
	consistent bool
	// unprocessed are BatchWriteItem entries refused by the proxy, to be
	// merged into the response's UnprocessedItems.
	unprocessed map[string][]json.RawMessage
}

// ServeHTTP charges and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read request: "+err.Error(), http.StatusBadRequest)
		return
	}
	pend, newBody, refuse := p.admit(op, body)
	if refuse != "" {
		writeThrottle(w, refuse)
		return
	}
	if newBody != nil {
		body = newBody
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	if pend != nil {
		r = r.WithContext(contextWith(r, pend))
	}
	p.proxy.ServeHTTP(w, r)
}

func writeThrottle(w http.ResponseWriter, msg string) {
	body, _ := json.Marshal(map[string]string{
		"__type":  "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
		"message": msg,
	})
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}

// request is the part of a DynamoDB request the proxy reads.
type request struct {
	TableName                 string                                              `json:"TableName"`
	Item                      item                                                `json:"Item"`
	Key                       item                                                `json:"Key"`
	ConsistentRead            bool                                                `json:"ConsistentRead"`
	KeyConditionExpression    string                                              `json:"KeyConditionExpression"`
	ExpressionAttributeNames  map[string]string                                   `json:"ExpressionAttributeNames"`
	ExpressionAttributeValues item                                                `json:"ExpressionAttributeValues"`
	KeyConditions             map[string]struct{ AttributeValueList []attrValue } `json:"KeyConditions"`
	RequestItems              json.RawMessage                                     `json:"RequestItems"`
	TransactItems             []map[string]request                                `json:"TransactItems"`
}

// admit charges a request before it is forwarded. It returns what the
// response must settle, a rewritten body (BatchWriteItem), or the reason
// to refuse it.
func (p *Proxy) admit(op string, body []byte) (*pending, []byte, string) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, nil, "" // the server answers malformed requests itself
	}
	now := p.opts.Now()
	switch op {
	case "PutItem":
		return nil, nil, p.chargeWrite(now, req.TableName, p.pkOf(req.Item), writeUnits(itemSize(req.Item)))
	case "UpdateItem":
		size := itemSize(req.Key) + itemSize(req.ExpressionAttributeValues)
		return nil, nil, p.chargeWrite(now, req.TableName, p.pkOf(req.Key), writeUnits(size))
	case "DeleteItem":
		return nil, nil, p.chargeWrite(now, req.TableName, p.pkOf(req.Key), writeUnits(itemSize(req.Key)))
	case "GetItem":
		pk := p.pkOf(req.Key)
		if msg := p.checkRead(now, req.TableName, pk); msg != "" {
			return nil, nil, msg
		}
		return &pending{op: op, table: req.TableName, pk: pk, consistent: req.ConsistentRead}, nil, ""
	case "Query":
		pk := p.queryPK(req)
		if msg := p.checkRead(now, req.TableName, pk); msg != "" {
			return nil, nil, msg
		}
		return &pending{op: op, table: req.TableName, pk: pk, consistent: req.ConsistentRead}, nil, ""
	case "BatchWriteItem":
		return p.admitBatchWrite(now, req.RequestItems)
	case "TransactWriteItems":
		return nil, nil, p.admitTransact(now, req.TransactItems)
	}
	return nil, nil, "" // not charged: BatchGetItem, Scan, table operations
}

// pkOf is the partition key value of a key or item, as text.
func (p *Proxy) pkOf(it item) string {
	v, ok := it[p.opts.PartitionKey]
	if !ok {
		return ""
	}
	switch {
	case v.S != nil:
		return *v.S
	case v.N != nil:
		return *v.N
	case v.B != nil:
		return *v.B
	}
	return ""
}

var keyCondEq = regexp.MustCompile(`(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)`)

// queryPK finds the partition key value a Query reads.
func (p *Proxy) queryPK(req request) string {
	for _, m := range keyCondEq.FindAllStringSubmatch(req.KeyConditionExpression, -1) {
		name := m[1]
		if strings.HasPrefix(name, "#") {
			name = req.ExpressionAttributeNames[name]
		}
		if name == p.opts.PartitionKey {
			return p.pkOf(item{name: req.ExpressionAttributeValues[m[2]]})
		}
	}
	if kc, ok := req.KeyConditions[p.opts.PartitionKey]; ok && len(kc.AttributeValueList) == 1 {
		return p.pkOf(item{p.opts.PartitionKey: kc.AttributeValueList[0]})
	}
	return ""
}

// part returns the accounting of (table, pk), moved to the window of now.
// The caller holds p.mu.
func (p *Proxy) part(now time.Time, table, pk string) *partition {
	id := table + "\x00" + pk
	pt := p.parts[id]
	if pt == nil {
		pt = &partition{table: table, key: pk}
		p.parts[id] = pt
	}
	if s := now.Unix(); s != pt.second {
		pt.second, pt.wUsed, pt.rUsed = s, 0, 0
	}
	return pt
}

// chargeWrite takes units from the partition's write budget of the
// current second, or says why it cannot.
func (p *Proxy) chargeWrite(now time.Time, table, pk string, units float64) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := p.part(now, table, pk)
	if pt.wUsed+units > p.opts.WriteUnits {
		pt.wThrot++
		return fmt.Sprintf("partition %q of table %s: %.0f write units this second, limit %.0f", pk, table, pt.wUsed, p.opts.WriteUnits)
	}
	pt.wUsed += units
	pt.wTotal += units
	pt.wPeak = max(pt.wPeak, pt.wUsed)
	return ""
}

// checkRead refuses a read of a partition whose read budget of the current
// second is used up; the read itself is charged when its size is known.
func (p *Proxy) checkRead(now time.Time, table, pk string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := p.part(now, table, pk)
	if pt.rUsed >= p.opts.ReadUnits {
		pt.rThrot++
		return fmt.Sprintf("partition %q of table %s: %.0f read units this second, limit %.0f", pk, table, pt.rUsed, p.opts.ReadUnits)
	}
	return ""
}

func (p *Proxy) chargeRead(now time.Time, table, pk string, units float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := p.part(now, table, pk)
	pt.rUsed += units
	pt.rTotal += units
	pt.rPeak = max(pt.rPeak, pt.rUsed)
}

// admitBatchWrite forwards the entries that fit their partitions and keeps
// the others to return as UnprocessedItems.
func (p *Proxy) admitBatchWrite(now time.Time, raw json.RawMessage) (*pending, []byte, string) {
	var tables map[string][]json.RawMessage
	if err := json.Unmarshal(raw, &tables); err != nil {
		return nil, nil, ""
	}
	kept := map[string][]json.RawMessage{}
	refused := map[string][]json.RawMessage{}
	var nKept int
	var reason string
	names := make([]string, 0, len(tables))
	for t := range tables {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, table := range names {
		for _, e := range tables[table] {
			var entry struct {
				PutRequest    *struct{ Item item }
				DeleteRequest *struct{ Key item }
			}
			_ = json.Unmarshal(e, &entry)
			var pk string
			units := 1.0
			switch {
			case entry.PutRequest != nil:
				pk, units = p.pkOf(entry.PutRequest.Item), writeUnits(itemSize(entry.PutRequest.Item))
			case entry.DeleteRequest != nil:
				pk = p.pkOf(entry.DeleteRequest.Key)
			}
			if msg := p.chargeWrite(now, table, pk, units); msg != "" {
				refused[table] = append(refused[table], e)
				reason = msg
				continue
			}
			kept[table] = append(kept[table], e)
			nKept++
		}
	}
	if len(refused) == 0 {
		return nil, nil, ""
	}
	if nKept == 0 {
		return nil, nil, reason
	}
	body, _ := json.Marshal(map[string]any{"RequestItems": kept})
	return &pending{op: "BatchWriteItem", unprocessed: refused}, body, ""
}

// admitTransact charges a transaction twice the units of its writes, and
// refuses it whole when any partition is over its limit.
func (p *Proxy) admitTransact(now time.Time, items []map[string]request) string {
	for _, ti := range items {
		for kind, r := range ti {
			switch kind {
			case "Put":
				if msg := p.chargeWrite(now, r.TableName, p.pkOf(r.Item), 2*writeUnits(itemSize(r.Item))); msg != "" {
					return msg
				}
			case "Update", "Delete", "ConditionCheck":
				size := itemSize(r.Key) + itemSize(r.ExpressionAttributeValues)
				if msg := p.chargeWrite(now, r.TableName, p.pkOf(r.Key), 2*writeUnits(size)); msg != "" {
					return msg
				}
			}
		}
	}
	return ""
}

// onResponse charges reads by what they returned and merges the refused
// entries of a batch into its UnprocessedItems.
func (p *Proxy) onResponse(resp *http.Response) error {
	pend, _ := resp.Request.Context().Value(ctxKey{}).(*pending)
	if pend == nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	switch pend.op {
	case "GetItem":
		var out struct{ Item item }
		_ = json.Unmarshal(body, &out)
		p.chargeRead(p.opts.Now(), pend.table, pend.pk, readUnits(itemSize(out.Item), pend.consistent))
	case "Query":
		var out struct{ Items []item }
		_ = json.Unmarshal(body, &out)
		size := 0
		for _, it := range out.Items {
			size += itemSize(it)
		}
		p.chargeRead(p.opts.Now(), pend.table, pend.pk, readUnits(size, pend.consistent))
	case "BatchWriteItem":
		var out map[string]json.RawMessage
		if err := json.Unmarshal(body, &out); err == nil {
			var un map[string][]json.RawMessage
			_ = json.Unmarshal(out["UnprocessedItems"], &un)
			if un == nil {
				un = map[string][]json.RawMessage{}
			}
			for t, es := range pend.unprocessed {
				un[t] = append(un[t], es...)
			}
			out["UnprocessedItems"], _ = json.Marshal(un)
			body, _ = json.Marshal(out)
			resp.Header.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}
