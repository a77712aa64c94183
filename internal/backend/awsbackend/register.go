package awsbackend

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/batonhq/baton/internal/awsdynamodb"
	"github.com/batonhq/baton/internal/backend"
	"github.com/batonhq/baton/internal/lease"
)

// The AWS engine registers as "aws", and as the URL scheme aws:
// aws://?table=T&queue=URL[&dlq=URL][&max_receives=N][&endpoint=URL]
// [&dynamodb_endpoint=URL][&sqs_endpoint=URL] (the URLs query-escaped); the
// region and credentials come from the SDK's standard configuration.
func init() {
	backend.Register(backend.Driver{
		Name:    "aws",
		Schemes: []string{"aws"},
		Open:    openConfig,
		FromURL: fromURL,
		OpenLocks: func(ctx context.Context, c backend.Config) (lease.Store, func() error, error) {
			table := envOr(c.Table, EnvTable)
			if table == "" {
				return nil, nil, &backend.ConfigError{Err: fmt.Errorf("aws: no table (%s)", EnvTable)}
			}
			client, _ := c.DynamoDB.(*dynamodb.Client)
			if client == nil {
				cl, err := clientsOf(ctx, c)
				if err != nil {
					return nil, nil, err
				}
				client = cl.DynamoDB
			}
			return awsdynamodb.NewLockStore(client, table, nil), func() error { return nil }, nil
		},
		Setup: func(ctx context.Context, c backend.Config, s backend.SetupConfig) (backend.SetupResult, error) {
			cl, err := clientsOf(ctx, c)
			if err != nil {
				return backend.SetupResult{}, err
			}
			p := SetupParams{Table: s.Table, Queue: s.Queue, MaxReceives: s.MaxReceives, Visibility: s.Visibility}
			res, err := Setup(ctx, cl, p)
			if err != nil {
				return backend.SetupResult{}, err
			}
			if p.Queue == "" {
				p.Queue = DefaultQueue
			}
			if p.Visibility == 0 {
				p.Visibility = DefaultVisibility
			}
			env := res.Env()
			if c.DynamoDBEndpoint != "" {
				env = append(env, [2]string{"AWS_ENDPOINT_URL_DYNAMODB", c.DynamoDBEndpoint})
			}
			if c.SQSEndpoint != "" {
				env = append(env, [2]string{"AWS_ENDPOINT_URL_SQS", c.SQSEndpoint})
			}
			return backend.SetupResult{
				Summary: fmt.Sprintf("table %s; work queue %s, to its dead-letter queue after %d receives, visibility %s", res.Table, p.Queue, res.MaxReceives, p.Visibility),
				Env:     env,
			}, nil
		},
		SetupDefaults: backend.SetupConfig{Table: DefaultTable, Queue: DefaultQueue, MaxReceives: DefaultMaxReceives, Visibility: DefaultVisibility},
		Defaults:      backend.Config{ReceiveWait: DefaultReceiveWait},
		Where: func(c backend.Config) string {
			if t := envOr(c.Table, EnvTable); t != "" {
				return "table " + t
			}
			return "aws"
		},
	})
}

func envOr(v, name string) string {
	if v != "" {
		return v
	}
	return os.Getenv(name)
}

func fromURL(u *url.URL, _ string, c *backend.Config) error {
	if u.Host != "" || (u.Path != "" && u.Path != "/") || u.Opaque != "" {
		return errors.New("want aws://?table=…&queue=… (no host or path: the region comes from the SDK's configuration)")
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "table":
			c.Table = v
		case "queue":
			c.QueueURL = v
		case "dlq":
			c.DLQURL = v
		case "endpoint":
			c.DynamoDBEndpoint, c.SQSEndpoint = v, v
		case "dynamodb_endpoint":
			c.DynamoDBEndpoint = v
		case "sqs_endpoint":
			c.SQSEndpoint = v
		case "max_receives":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("max_receives=%q: not a count", v)
			}
			c.MaxReceives = n
		default:
			return fmt.Errorf("unknown parameter %q (want table, queue, dlq, max_receives, endpoint, dynamodb_endpoint, sqs_endpoint)", k)
		}
	}
	return nil
}

// clientsOf returns SDK clients from the standard configuration chain and
// c's endpoints.
func clientsOf(ctx context.Context, c backend.Config) (Clients, error) {
	cfg, err := LoadConfig(ctx)
	if errors.Is(err, ErrNoRegion) {
		return Clients{}, &backend.ConfigError{Err: err}
	}
	if err != nil {
		return Clients{}, err
	}
	return NewTracedClients(cfg, Endpoints{DynamoDB: c.DynamoDBEndpoint, SQS: c.SQSEndpoint}, c.TracerProvider), nil
}

func openConfig(ctx context.Context, c backend.Config) (backend.Backend, error) {
	p := Params{Table: envOr(c.Table, EnvTable), QueueURL: envOr(c.QueueURL, EnvQueueURL), DLQURL: envOr(c.DLQURL, EnvDLQURL),
		MaxReceives: c.MaxReceives, ReceiveWait: c.ReceiveWait, JobQueueURLs: c.JobQueueURLs}
	if p.Table == "" || p.QueueURL == "" {
		return backend.Backend{}, &backend.ConfigError{Err: fmt.Errorf("aws: the table and the work queue are required (%s and %s)", EnvTable, EnvQueueURL)}
	}
	cl, err := clientsOf(ctx, c)
	if err != nil {
		return backend.Backend{}, err
	}
	p.Clients = cl
	return Open(ctx, p)
}
