package ddbthrottle

import (
	"context"
	"net/http"
	"sort"
)

func contextWith(r *http.Request, p *pending) context.Context {
	return context.WithValue(r.Context(), ctxKey{}, p)
}

// PartitionStats is the accounting of one partition key value.
type PartitionStats struct {
	Table, Key string
	// PeakWriteUnits and PeakReadUnits are the most units the partition
	// used in any one second.
	PeakWriteUnits, PeakReadUnits float64
	// WriteUnits and ReadUnits are the units charged in all.
	WriteUnits, ReadUnits float64
	// WriteThrottles and ReadThrottles count the requests refused.
	WriteThrottles, ReadThrottles int
}

// Throttles is the number of requests refused on the partition.
func (s PartitionStats) Throttles() int { return s.WriteThrottles + s.ReadThrottles }

// Stats is the proxy's accounting since it started (or since Reset).
type Stats struct {
	Partitions []PartitionStats // hottest first (by peak write units, then peak read units)
	Throttles  int              // requests refused, all partitions
	WriteUnits float64          // write units charged, all partitions
	ReadUnits  float64          // read units charged, all partitions
	// Unreachable counts requests the target did not answer (a reset
	// connection of a busy emulator): answered 502, which the SDK
	// retries.
	Unreachable int
}

// Hottest is the partition with the highest peak write rate (zero when
// nothing was charged).
func (s Stats) Hottest() PartitionStats {
	if len(s.Partitions) == 0 {
		return PartitionStats{}
	}
	return s.Partitions[0]
}

// HottestRead is the partition with the highest peak read rate.
func (s Stats) HottestRead() PartitionStats {
	var h PartitionStats
	for _, p := range s.Partitions {
		if p.PeakReadUnits > h.PeakReadUnits {
			h = p
		}
	}
	return h
}

// Stats returns the accounting so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Unreachable: p.unreachable}
	for _, pt := range p.parts {
		ps := PartitionStats{
			Table: pt.table, Key: pt.key,
			PeakWriteUnits: pt.wPeak, PeakReadUnits: pt.rPeak,
			WriteUnits: pt.wTotal, ReadUnits: pt.rTotal,
			WriteThrottles: pt.wThrot, ReadThrottles: pt.rThrot,
		}
		s.Partitions = append(s.Partitions, ps)
		s.Throttles += ps.Throttles()
		s.WriteUnits += ps.WriteUnits
		s.ReadUnits += ps.ReadUnits
	}
	sort.Slice(s.Partitions, func(i, j int) bool {
		a, b := s.Partitions[i], s.Partitions[j]
		if a.PeakWriteUnits != b.PeakWriteUnits {
			return a.PeakWriteUnits > b.PeakWriteUnits
		}
		if a.PeakReadUnits != b.PeakReadUnits {
			return a.PeakReadUnits > b.PeakReadUnits
		}
		return a.Table+a.Key < b.Table+b.Key
	})
	return s
}

// Reset forgets the accounting (the limits of the current second too).
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.parts = map[string]*partition{}
	p.unreachable = 0
}
