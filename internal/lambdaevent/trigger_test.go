package lambdaevent_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/lambdaevent"
)

func TestDecodeTrigger(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 1, 7, 0, time.UTC)
	tick := time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)
	rule := func(extra string) string {
		return `{"version":"0","id":"53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa","detail-type":"Scheduled Event",` +
			`"source":"aws.events","account":"123456789012","time":"2026-11-21T12:01:00Z","region":"eu-west-1",` +
			`"resources":["arn:aws:events:eu-west-1:123456789012:rule/baton-Schedule-1A2B3C"]` + extra + `}`
	}
	cases := []struct {
		name    string
		payload string
		want    lambdaevent.Trigger
		wantErr string // substring; empty: success
	}{
		{
			name:    "rule event takes the configured job",
			payload: rule(`,"detail":{}`),
			want: lambdaevent.Trigger{Job: "fx", At: tick, Source: lambdaevent.SourceRule,
				EventID:   "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
				Resources: []string{"arn:aws:events:eu-west-1:123456789012:rule/baton-Schedule-1A2B3C"}},
		},
		{
			name:    "rule event without detail",
			payload: rule(``),
			want: lambdaevent.Trigger{Job: "fx", At: tick, Source: lambdaevent.SourceRule,
				EventID:   "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
				Resources: []string{"arn:aws:events:eu-west-1:123456789012:rule/baton-Schedule-1A2B3C"}},
		},
		{
			name:    "rule event with the job in detail",
			payload: rule(`,"detail":{"job":"fx"}`),
			want: lambdaevent.Trigger{Job: "fx", At: tick, Source: lambdaevent.SourceRule,
				EventID:   "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
				Resources: []string{"arn:aws:events:eu-west-1:123456789012:rule/baton-Schedule-1A2B3C"}},
		},
		{
			name:    "rule event seconds past the tick keep their time",
			payload: `{"detail-type":"Scheduled Event","source":"aws.events","time":"2026-11-21T12:01:07Z","detail":{}}`,
			want:    lambdaevent.Trigger{Job: "fx", At: tick.Add(7 * time.Second), Source: lambdaevent.SourceRule},
		},
		{
			name:    "scheduler payload",
			payload: `{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z"}`,
			want:    lambdaevent.Trigger{Job: "fx", At: tick, Source: lambdaevent.SourceScheduler},
		},
		{
			name:    "scheduler payload with an offset is turned to UTC",
			payload: `{"job":"fx","scheduledTime":"2026-11-21T13:01:00+01:00"}`,
			want:    lambdaevent.Trigger{Job: "fx", At: tick, Source: lambdaevent.SourceScheduler},
		},
		{
			name:    "replay without force",
			payload: `{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z","force":false}`,
			want:    lambdaevent.Trigger{Job: "fx", At: tick, Source: lambdaevent.SourceReplay},
		},
		{
			name:    "forced replay",
			payload: `{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z","force":true}`,
			want:    lambdaevent.Trigger{Job: "fx", At: tick, Force: true, Source: lambdaevent.SourceReplay},
		},
		{
			name:    "within the skew allowance",
			payload: `{"job":"fx","scheduledTime":"2026-11-21T12:02:00Z"}`,
			want:    lambdaevent.Trigger{Job: "fx", At: tick.Add(time.Minute), Source: lambdaevent.SourceScheduler},
		},
		{
			name:    "rule constant input: the job, the arrival time",
			payload: `{"job":"fx"}`,
			want:    lambdaevent.Trigger{Job: "fx", At: now, Source: lambdaevent.SourceRuleInput},
		},
		// Malformed.
		{name: "empty", payload: ``, wantErr: "empty payload"},
		{name: "whitespace", payload: " \n", wantErr: "empty payload"},
		{name: "null", payload: `null`, wantErr: "not a JSON object"},
		{name: "array", payload: `[1,2]`, wantErr: "not a JSON object"},
		{name: "string", payload: `"fx"`, wantErr: "not a JSON object"},
		{name: "truncated", payload: `{"job":"fx"`, wantErr: "not a JSON object"},
		{name: "console test event", payload: `{"key1":"value1","key2":"value2"}`, wantErr: `unknown payload shape with fields ["key1", "key2"]`},
		{name: "empty object", payload: `{}`, wantErr: "unknown payload shape with fields []"},
		{name: "rule: other source", payload: `{"detail-type":"Scheduled Event","source":"aws.s3","time":"2026-11-21T12:01:00Z"}`, wantErr: `field "source" is "aws.s3", want "aws.events"`},
		{name: "rule: other detail type", payload: `{"detail-type":"Object Created","source":"aws.events","time":"2026-11-21T12:01:00Z"}`, wantErr: `field "detail-type" is "Object Created"`},
		{name: "rule: no source", payload: `{"detail-type":"Scheduled Event","time":"2026-11-21T12:01:00Z"}`, wantErr: `field "source" is missing`},
		{name: "rule: no detail type", payload: `{"source":"aws.events","time":"2026-11-21T12:01:00Z"}`, wantErr: `field "detail-type" is missing`},
		{name: "rule: no time", payload: `{"detail-type":"Scheduled Event","source":"aws.events"}`, wantErr: `field "time" is missing`},
		{name: "rule: bad time", payload: `{"detail-type":"Scheduled Event","source":"aws.events","time":"21/11/2026 12:01"}`, wantErr: `field "time": invalid RFC 3339 time: "21/11/2026 12:01"`},
		{name: "rule: time not a string", payload: `{"detail-type":"Scheduled Event","source":"aws.events","time":1700000000}`, wantErr: `field "time": want a JSON string`},
		{name: "rule: zero time", payload: `{"detail-type":"Scheduled Event","source":"aws.events","time":"0001-01-01T00:00:00Z"}`, wantErr: "year 1 outside 1970–2199"},
		{name: "rule: detail not an object", payload: rule(`,"detail":"fx"`), wantErr: `field "detail": payload is not a JSON object`},
		{name: "rule: detail job not a string", payload: rule(`,"detail":{"job":7}`), wantErr: `field "detail.job" is not a non-empty string`},
		{name: "rule: detail names another job", payload: rule(`,"detail":{"job":"equities"}`), wantErr: `job "equities" is not in this deployment's catalog (jobs: fx)`},
		{name: "rule: resources not strings", payload: `{"detail-type":"Scheduled Event","source":"aws.events","time":"2026-11-21T12:01:00Z","resources":[1]}`, wantErr: `field "resources`},
		{name: "scheduler: no job", payload: `{"scheduledTime":"2026-11-21T12:01:00Z"}`, wantErr: `scheduler payload: field "job" is missing`},
		{name: "scheduler: empty job", payload: `{"job":"","scheduledTime":"2026-11-21T12:01:00Z"}`, wantErr: `field "job" is empty`},
		{name: "replay: no time", payload: `{"job":"fx","force":true}`, wantErr: `replay payload: field "scheduledTime" is missing`},
		{name: "rule input: unknown job", payload: `{"job":"equities"}`, wantErr: `rule_input trigger: job "equities" is not in this deployment's catalog (jobs: fx)`},
		{name: "scheduler: placeholder not substituted", payload: `{"job":"fx","scheduledTime":"<aws.scheduler.scheduled-time>"}`, wantErr: `invalid RFC 3339 time: "<aws.scheduler.scheduled-time>"`},
		{name: "scheduler: time without zone", payload: `{"job":"fx","scheduledTime":"2026-11-21T12:01:00"}`, wantErr: "two digits per field"},
		{name: "scheduler: empty time", payload: `{"job":"fx","scheduledTime":""}`, wantErr: "invalid RFC 3339 time: empty"},
		{name: "scheduler: time as number", payload: `{"job":"fx","scheduledTime":1763726460}`, wantErr: `field "scheduledTime": want a JSON string, got number`},
		{name: "scheduler: other job", payload: `{"job":"equities","scheduledTime":"2026-11-21T12:01:00Z"}`, wantErr: `scheduler trigger: job "equities" is not in this deployment's catalog (jobs: fx)`},
		{name: "scheduler: unknown field", payload: `{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z","generation":2}`, wantErr: `unknown field "generation"`},
		{name: "scheduler: far future", payload: `{"job":"fx","scheduledTime":"2026-11-21T12:10:00Z"}`, wantErr: "is 8m53s in the future (allowance 1m0s)"},
		{name: "replay: force not a bool", payload: `{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z","force":"yes"}`, wantErr: `field "force": want a JSON boolean, got string`},
		{name: "replay: no job", payload: `{"scheduledTime":"2026-11-21T12:01:00Z","force":true}`, wantErr: `replay payload: field "job" is missing`},
		{name: "replay: key case", payload: `{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z","FORCE":true}`, wantErr: `field "FORCE": names are case-sensitive, want "force"`},
		{name: "scheduler: key case", payload: `{"Job":"fx","scheduledTime":"2026-11-21T12:01:00Z"}`, wantErr: `field "Job": names are case-sensitive, want "job"`},
		{name: "rule: key case", payload: `{"detail-type":"Scheduled Event","Source":"aws.events","source":"aws.events","time":"2026-11-21T12:01:00Z"}`, wantErr: `field "Source": names are case-sensitive`},
		{name: "rule: detail key case", payload: rule(`,"detail":{"JOB":"fx"}`), wantErr: `field "JOB": names are case-sensitive, want "job"`},
		{name: "duplicate key", payload: `{"job":"fx","job":"fx","scheduledTime":"2026-11-21T12:01:00Z"}`, wantErr: `field "job" appears twice`},
		{name: "scheduler: one-digit hour", payload: `{"job":"fx","scheduledTime":"2026-11-21T2:01:00Z"}`, wantErr: "two digits per field"},
		{name: "scheduler: offset beyond 14h", payload: `{"job":"fx","scheduledTime":"2026-11-21T12:01:00+23:59"}`, wantErr: "offset beyond ±14:00"},
		{name: "scheduler: stale", payload: `{"job":"fx","scheduledTime":"2026-11-20T12:01:00Z"}`, wantErr: "is 24h0m7s old, beyond the bound of 6h0m0s for scheduled triggers"},
		{name: "rule: stale", payload: `{"detail-type":"Scheduled Event","source":"aws.events","time":"2020-11-21T12:01:00Z"}`, wantErr: "for scheduled triggers: a stale delivery"},
		{name: "replay: trailing garbage", payload: `{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z","force":true} x`, wantErr: `unexpected "x" after the JSON value at byte 65`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := lambdaevent.DecodeTrigger(lambdaevent.TriggerParams{
				Payload: []byte(tc.payload), Jobs: []string{"fx"}, Now: now, Skew: time.Minute, MaxAge: 6 * time.Hour,
			})
			if tc.wantErr != "" {
				require.Error(t, err)
				require.True(t, errors.Is(err, lambdaevent.ErrBadTrigger), "error %v does not match ErrBadTrigger", err)
				require.Contains(t, err.Error(), tc.wantErr)
				require.Equal(t, lambdaevent.Trigger{}, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, time.UTC, got.At.Location())
		})
	}
}

// A rule event that names no job is accepted only when the catalog has
// one job; with several it is refused, naming them; its detail or a
// constant input picks one.
func TestDecodeTriggerSeveralJobs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 1, 7, 0, time.UTC)
	jobs := []string{"equities", "fx"}
	decode := func(payload string) (lambdaevent.Trigger, error) {
		return lambdaevent.DecodeTrigger(lambdaevent.TriggerParams{Payload: []byte(payload), Jobs: jobs, Now: now, Skew: time.Minute})
	}
	bare := `{"detail-type":"Scheduled Event","source":"aws.events","time":"2026-11-21T12:01:00Z"}`
	_, err := decode(bare)
	require.ErrorIs(t, err, lambdaevent.ErrBadTrigger)
	require.ErrorContains(t, err, `rule event: it names no job and the catalog has 2 (equities, fx): give the rule a constant input {"job": "<name>"}`)

	got, err := decode(`{"detail-type":"Scheduled Event","source":"aws.events","time":"2026-11-21T12:01:00Z","detail":{"job":"equities"}}`)
	require.NoError(t, err)
	require.Equal(t, "equities", got.Job)

	got, err = decode(`{"job":"equities"}`)
	require.NoError(t, err)
	require.Equal(t, lambdaevent.Trigger{Job: "equities", At: now, Source: lambdaevent.SourceRuleInput}, got)

	got, err = decode(`{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z"}`)
	require.NoError(t, err)
	require.Equal(t, "fx", got.Job)

	_, err = decode(`{"job":"bonds","scheduledTime":"2026-11-21T12:01:00Z"}`)
	require.ErrorContains(t, err, `job "bonds" is not in this deployment's catalog (jobs: equities, fx)`)
}

// Replays are exempt from the age bound: an operator may replay any tick.
func TestDecodeTriggerReplayOfOldTick(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 1, 7, 0, time.UTC)
	for _, payload := range []string{
		`{"job":"fx","scheduledTime":"2025-01-01T00:00:00Z","force":false}`,
		`{"job":"fx","scheduledTime":"2025-01-01T00:00:00Z","force":true}`,
	} {
		tr, err := lambdaevent.DecodeTrigger(lambdaevent.TriggerParams{Payload: []byte(payload), Jobs: []string{"fx"}, Now: now, Skew: time.Minute, MaxAge: time.Hour})
		require.NoError(t, err, payload)
		require.Equal(t, lambdaevent.SourceReplay, tr.Source)
	}
}

// Whatever the payload, DecodeTrigger returns a trigger of a known job at
// a time within the bounds, or an error matching ErrBadTrigger of bounded
// size; it never panics.
func FuzzDecodeTrigger(f *testing.F) {
	for _, s := range []string{
		`{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z"}`,
		`{"job":"fx","scheduledTime":"2026-11-21T12:01:00Z","force":true}`,
		`{"job":"fx"}`,
		`{"detail-type":"Scheduled Event","source":"aws.events","time":"2026-11-21T12:01:00Z","detail":{}}`,
		`{"FORCE":true}`, `[]`, `{"job":"fx"} x`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 11, 21, 12, 1, 7, 0, time.UTC)
	f.Fuzz(func(t *testing.T, payload []byte) {
		tr, err := lambdaevent.DecodeTrigger(lambdaevent.TriggerParams{Payload: payload, Jobs: []string{"fx"}, Now: now, Skew: time.Minute, MaxAge: 6 * time.Hour})
		if err != nil {
			if !errors.Is(err, lambdaevent.ErrBadTrigger) {
				t.Fatalf("error %v does not match ErrBadTrigger", err)
			}
			if len(err.Error()) > 2048 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if tr.Job != "fx" || tr.At.After(now.Add(time.Minute)) || tr.At.Location() != time.UTC {
			t.Fatalf("accepted %+v", tr)
		}
		if tr.Source != lambdaevent.SourceReplay && tr.At.Before(now.Add(-6*time.Hour)) {
			t.Fatalf("accepted a stale scheduled trigger %+v", tr)
		}
	})
}
