package lambdaapp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/backend/awsbackend"
	"github.com/batonhq/baton/internal/lambdaevent"
)

// Function names one of the two Lambda functions.
type Function string

const (
	Coordinator Function = "coordinator"
	Consumer    Function = "consumer"
)

// Environment variables the functions read. Variables lists which function
// reads which; the template check holds template.yaml to that list.
const (
	EnvTable       = awsbackend.EnvTable        // DynamoDB table (leases, runs, items, effects)
	EnvQueueURL    = awsbackend.EnvQueueURL     // work queue URL
	EnvDLQURL      = awsbackend.EnvDLQURL       // dead-letter queue URL (consumer)
	EnvMaxReceives = awsbackend.EnvMaxReceives  // the work queue's redrive maxReceiveCount (consumer)
	EnvTriggerSkew = "BATON_TRIGGER_SKEW"       // how far in the future a trigger time may be (coordinator)
	EnvTriggerAge  = "BATON_TRIGGER_MAX_AGE"    // how old a scheduled trigger's time may be (coordinator)
	EnvLogLevel    = "BATON_LOG_LEVEL"          // debug, info, warn, error
	EnvService     = "BATON_SERVICE_NAME"       // the service of logs and metrics
	EnvNamespace   = "BATON_METRICS_NAMESPACE"  // the CloudWatch namespace of the metrics
	EnvJobQueues   = awsbackend.EnvJobQueueURLs // the job queues (baton.JobQueue): name=url,name=url
	// EnvLambdaLogLevel is set by Lambda from the function's
	// LoggingConfig.ApplicationLogLevel (TRACE, DEBUG, INFO, WARN, ERROR,
	// FATAL). It is honoured: nothing below it is written (Lambda would
	// drop it), so the level is the higher of it and EnvLogLevel. (The
	// template keeps Lambda's filter at INFO at most, where the EMF lines
	// are, and filters below that with EnvLogLevel.)
	EnvLambdaLogLevel = "AWS_LAMBDA_LOG_LEVEL"
)

// DefaultTriggerSkew is the trigger-time allowance when EnvTriggerSkew is
// empty.
const DefaultTriggerSkew = time.Minute

// DefaultTriggerAge is the age bound of scheduled triggers when
// EnvTriggerAge is empty: the one every entry point applies
// (lambdaevent.DefaultTriggerAge).
const DefaultTriggerAge = lambdaevent.DefaultTriggerAge

// Variable is one environment variable a function reads.
type Variable struct {
	Name     string
	Required bool
	Usage    string
}

// Variables returns the environment variables f reads: the one list that
// LoadConfig validates and the template check compares with template.yaml.
func Variables(f Function) []Variable {
	common := []Variable{
		{EnvTable, true, "the DynamoDB table name"},
		{EnvQueueURL, true, "the work queue URL"},
		{EnvLogLevel, false, "log level: debug, info (default), warn or error (never below " + EnvLambdaLogLevel + ", Lambda's filter)"},
		{EnvService, false, "the service named in every log line and metric (dimension service): the stack's name, so that two stacks do not merge (default " + DefaultService + ")"},
		{EnvNamespace, false, "the CloudWatch namespace of the metrics (default " + DefaultNamespace + ")"},
		{EnvJobQueues, false, "the queues of the jobs with a queue of their own (baton.JobQueue), name=url,name=url; empty: none"},
	}
	switch f {
	case Coordinator:
		return append(common,
			Variable{EnvTriggerSkew, false, "how far in the future a trigger time may be, a Go duration (default 1m)"},
			Variable{EnvTriggerAge, false, "how old a scheduled trigger's time may be, a Go duration (default 6h; 0: no bound); replays are exempt"},
		)
	case Consumer:
		return append(common,
			Variable{EnvDLQURL, true, "the dead-letter queue URL"},
			Variable{EnvMaxReceives, true, "the work queue's redrive maxReceiveCount"},
		)
	}
	return nil
}

// Config is a function's configuration, read from its environment.
type Config struct {
	Function    Function
	Table       string
	QueueURL    string
	DLQURL      string        // consumer
	MaxReceives int           // consumer
	TriggerSkew time.Duration // coordinator
	TriggerAge  time.Duration // coordinator
	LogLevel    slog.Level
	Service     string
	Namespace   string
	// JobQueueURLs are the job queues' URLs by name (EnvJobQueues).
	JobQueueURLs map[string]string
}

// LoadConfig reads f's variables with getenv (os.Getenv in a function) and
// validates them. The error names every missing or bad variable.
func LoadConfig(f Function, getenv func(string) string) (Config, error) {
	vars := Variables(f)
	if vars == nil {
		return Config{}, fmt.Errorf("config: unknown function %q", f)
	}
	cfg := Config{Function: f, TriggerSkew: DefaultTriggerSkew, LogLevel: slog.LevelInfo, Service: DefaultService, Namespace: DefaultNamespace}
	if f == Coordinator {
		cfg.TriggerAge = DefaultTriggerAge
	}
	var errs []error
	for _, v := range vars {
		s := strings.TrimSpace(getenv(v.Name))
		if s == "" {
			if v.Required {
				errs = append(errs, fmt.Errorf("%s is not set (%s)", v.Name, v.Usage))
			}
			continue
		}
		if err := cfg.set(v.Name, s); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", v.Name, s, err))
		}
	}
	if s := strings.TrimSpace(getenv(EnvLambdaLogLevel)); s != "" {
		l, err := lambdaLevel(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", EnvLambdaLogLevel, s, err))
		}
		cfg.LogLevel = max(cfg.LogLevel, l)
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("%s configuration: %w", f, err)
	}
	return cfg, nil
}

// lambdaLevel maps a level of Lambda's logging configuration to slog's.
func lambdaLevel(s string) (slog.Level, error) {
	switch strings.ToUpper(s) {
	case "TRACE", "DEBUG":
		return slog.LevelDebug, nil
	case "INFO":
		return slog.LevelInfo, nil
	case "WARN":
		return slog.LevelWarn, nil
	case "ERROR", "FATAL":
		return slog.LevelError, nil
	}
	return slog.LevelInfo, errors.New("not a Lambda log level: want TRACE, DEBUG, INFO, WARN, ERROR or FATAL")
}

func (c *Config) set(name, s string) error {
	switch name {
	case EnvTable:
		c.Table = s
	case EnvQueueURL:
		if err := checkURL(s); err != nil {
			return err
		}
		c.QueueURL = s
	case EnvDLQURL:
		if err := checkURL(s); err != nil {
			return err
		}
		c.DLQURL = s
	case EnvMaxReceives:
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return errors.New("not a positive integer")
		}
		c.MaxReceives = n
	case EnvTriggerSkew:
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return errors.New("not a non-negative duration such as 1m or 30s")
		}
		c.TriggerSkew = d
	case EnvTriggerAge:
		d, err := lambdaevent.ParseTriggerAge(s)
		if err != nil {
			return errors.New("not a non-negative duration such as 6h or 30m")
		}
		c.TriggerAge = d
	case EnvJobQueues:
		urls, err := ParseJobQueueURLs(s)
		if err != nil {
			return err
		}
		c.JobQueueURLs = urls
	case EnvService:
		if len(s) > 255 {
			return errors.New("longer than 255 characters")
		}
		c.Service = s
	case EnvNamespace:
		if len(s) > 255 || strings.HasPrefix(s, "AWS/") {
			return errors.New("not a custom CloudWatch namespace (at most 255 characters, not AWS/…)")
		}
		c.Namespace = s
	case EnvLogLevel:
		if err := c.LogLevel.UnmarshalText([]byte(s)); err != nil {
			return errors.New("not a log level: want debug, info, warn or error")
		}
	}
	return nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("not an http(s) queue URL")
	}
	return nil
}

// ParseJobQueueURLs reads "name=url,name=url" (EnvJobQueues): each name a
// job queue's (baton.JobQueue.Name), each URL an http(s) queue URL, no
// name twice.
func ParseJobQueueURLs(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, url, ok := strings.Cut(entry, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want name=url", entry)
		}
		if err := checkURL(url); err != nil {
			return nil, fmt.Errorf("queue %s: %w", name, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("queue %s named twice", name)
		}
		out[name] = url
	}
	return out, nil
}
