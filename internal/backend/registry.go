package backend

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/lease"
)

// The registry: every entry point (the CLI, batonhttp, batonclient,
// batonlock) opens an engine through Open, by name or by URL, and so
// accepts every engine its binary links. An engine registers itself
// (Register) from an init function of the package that builds it, as
// database/sql's drivers do: a binary links, and accepts, only the
// engines it imports.

// DefaultStore is the embedded store's file when Config.Store is "".
const DefaultStore = "var/baton.db"

// EnvPostgresDSN is the variable the postgres engine reads its connection
// string from when Config.DSN is "".
const EnvPostgresDSN = "BATON_PG_DSN"

// ErrUnknownEngine matches Open's error for a name or URL scheme no
// linked engine registered; the error lists those registered.
var ErrUnknownEngine = errors.New("unknown engine")

// ErrNoStore matches the error of a read-only open (Config.ReadOnly) that
// finds no store to read.
var ErrNoStore = errors.New("no store")

// Config says where an engine's state is: the options of every entry
// point, each engine reading those that concern it. An engine named by URL
// (Open's engine argument) takes its settings from the URL first.
type Config struct {
	// Store is the embedded store's SQLite file (sqlite); "" means
	// DefaultStore.
	Store string
	// ReadOnly opens an existing store for reading only (sqlite: nothing
	// created, every write fails; a missing store is ErrNoStore); the
	// other engines ignore it.
	ReadOnly bool
	// DSN is the PostgreSQL connection string (postgres); "" means
	// $BATON_PG_DSN.
	DSN string
	// RetryWindow is how long each PostgreSQL operation retries a lost
	// connection; 0: the engine's default, negative: never.
	RetryWindow time.Duration
	// Setup applies the engine's schema before opening (postgres: its
	// migrations and queues, idempotent); an engine that sets itself up
	// ignores it.
	Setup bool
	// Table, QueueURL and DLQURL are the DynamoDB table, the SQS work
	// queue and its dead-letter queue (aws); "" means $BATON_TABLE,
	// $BATON_QUEUE_URL, $BATON_DLQ_URL.
	Table, QueueURL, DLQURL string
	// MaxReceives is the work queue's redrive limit (aws); 0: read from
	// the queue's redrive policy.
	MaxReceives int
	// ReceiveWait is an idle consumer's long-poll wait; 0: the engine's
	// default.
	ReceiveWait time.Duration
	// JobQueueURLs are the job queues' URLs by name (aws).
	JobQueueURLs map[string]string
	// DynamoDBEndpoint and SQSEndpoint override the AWS endpoints (a local
	// emulator); "" leaves them to the SDK's configuration.
	DynamoDBEndpoint, SQSEndpoint string
	// DynamoDB, optional, is the *dynamodb.Client the aws engine's locks
	// use (OpenLocks) instead of one built from the SDK's configuration.
	DynamoDB any
	// TracerProvider records the engine's calls as spans; nil: the global
	// provider.
	TracerProvider trace.TracerProvider
}

// SetupConfig says what an engine's setup makes (baton setup); a zero
// field means the engine's default (Driver.SetupDefaults).
type SetupConfig struct {
	Table       string        // the DynamoDB table (aws)
	Queue       string        // the work queue's name (aws)
	MaxReceives int           // receives before a message is dead-lettered
	Visibility  time.Duration // the work queue's visibility timeout (aws)
}

// SetupResult says what an engine's setup made.
type SetupResult struct {
	// Summary is one line for an operator, without secrets.
	Summary string
	// Env are the variables that name what was made, to export; none that
	// would hold a secret.
	Env [][2]string
	// Fields are the report's fields (--json), without secrets.
	Fields map[string]any
}

// Driver is an engine as the registry knows it.
type Driver struct {
	// Name is the engine's name ("sqlite", "aws", "postgres"): the CLI's
	// --backend, the libraries' Engine option.
	Name string
	// Schemes are the URL schemes that name the engine ("postgres" and
	// "postgresql"); none: by name only.
	Schemes []string
	// Open opens the engine.
	Open func(ctx context.Context, c Config) (Backend, error)
	// FromURL, with Schemes, folds an engine URL into c (the path of a
	// file, a table, a connection string).
	FromURL func(u *url.URL, raw string, c *Config) error
	// OpenLocks, optional, opens the engine's lock store alone
	// (batonlock), with the function that releases it; nil: Open's
	// Backend.Locks.
	OpenLocks func(ctx context.Context, c Config) (lease.Store, func() error, error)
	// Setup, optional, makes the engine's resources; nil: the engine sets
	// itself up when opened.
	Setup func(ctx context.Context, c Config, s SetupConfig) (SetupResult, error)
	// SetupDefaults are Setup's defaults, and Defaults Open's (the
	// ReceiveWait), which help shows.
	SetupDefaults SetupConfig
	Defaults      Config
	// Where, optional, says where c points, without secrets (a redacted
	// connection string).
	Where func(c Config) string
}

var registry struct {
	sync.RWMutex
	byName   map[string]Driver
	byScheme map[string]string
}

// Register makes the engine d opens available by its name and schemes. It
// is called from the init function of the engine's package, and panics,
// as database/sql.Register does, when d is incomplete or a name or scheme
// is taken: a programming error, found when the binary starts.
func Register(d Driver) {
	registry.Lock()
	defer registry.Unlock()
	if d.Name == "" || d.Open == nil || (len(d.Schemes) > 0 && d.FromURL == nil) {
		panic("backend: Register of an incomplete driver " + d.Name)
	}
	if registry.byName == nil {
		registry.byName, registry.byScheme = map[string]Driver{}, map[string]string{}
	}
	if _, dup := registry.byName[d.Name]; dup {
		panic("backend: Register called twice for engine " + d.Name)
	}
	for _, s := range d.Schemes {
		if _, dup := registry.byScheme[s]; dup {
			panic("backend: Register called twice for scheme " + s)
		}
		registry.byScheme[s] = d.Name
	}
	registry.byName[d.Name] = d
}

// Engines returns the names of the registered engines, sorted.
func Engines() []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for n := range registry.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// schemes returns the registered URL schemes, sorted.
func schemes() []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for s := range registry.byScheme {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Lookup returns the registered engine called name.
func Lookup(name string) (Driver, bool) {
	registry.RLock()
	defer registry.RUnlock()
	d, ok := registry.byName[name]
	return d, ok
}

// Resolve returns the engine that engine names, and c with what an engine
// URL says folded in. engine is a registered name ("sqlite", "aws",
// "postgres"), a URL of a registered scheme (sqlite:///path/to.db,
// postgres://…, aws://?table=…&queue=…), or a plain path to a SQLite file
// (one holding a '/' or ending in .db), the sqlite engine's Store.
func Resolve(engine string, c Config) (Driver, Config, error) {
	if d, ok := Lookup(engine); ok {
		return d, c, nil
	}
	scheme, _, isURL := strings.Cut(engine, ":")
	if isURL && validScheme(scheme) && !isWindowsPath(engine) {
		registry.RLock()
		name, ok := registry.byScheme[strings.ToLower(scheme)]
		registry.RUnlock()
		if !ok {
			return Driver{}, c, fmt.Errorf("%w: no engine for URL scheme %q (registered schemes: %s; engines: %s)",
				ErrUnknownEngine, scheme, list(schemes()), list(Engines()))
		}
		d, _ := Lookup(name)
		u, err := url.Parse(engine)
		if err != nil {
			return Driver{}, c, fmt.Errorf("%s engine URL: not a URL: %s", name, redactURLError(err))
		}
		if err := d.FromURL(u, engine, &c); err != nil {
			return Driver{}, c, fmt.Errorf("%s engine URL: %w", name, err)
		}
		return d, c, nil
	}
	if engine != "" && (strings.ContainsAny(engine, `/\`) || strings.HasSuffix(engine, ".db")) {
		d, ok := Lookup("sqlite")
		if !ok {
			return Driver{}, c, fmt.Errorf("%w: %q looks like a SQLite file, but this binary links no sqlite engine (engines: %s)",
				ErrUnknownEngine, engine, list(Engines()))
		}
		c.Store = engine
		return d, c, nil
	}
	what := fmt.Sprintf("%q", engine)
	if len(engine) > 64 || strings.ContainsAny(engine, "= \t@") {
		what = "(neither a name, a URL nor a path; not repeated: it may hold a password)"
	}
	return Driver{}, c, fmt.Errorf("%w %s (engines: %s; or a URL of scheme %s)", ErrUnknownEngine, what, list(Engines()), list(schemes()))
}

// Open opens the engine that engine names (see Resolve) on c.
func Open(ctx context.Context, engine string, c Config) (Backend, error) {
	d, c, err := Resolve(engine, c)
	if err != nil {
		return Backend{}, err
	}
	return d.Open(ctx, c)
}

// OpenLocks opens the lock store of the engine that engine names (see
// Resolve) on c, with the function that releases it.
func OpenLocks(ctx context.Context, engine string, c Config) (lease.Store, func() error, error) {
	d, c, err := Resolve(engine, c)
	if err != nil {
		return nil, nil, err
	}
	if d.OpenLocks != nil {
		return d.OpenLocks(ctx, c)
	}
	b, err := d.Open(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	if b.Locks == nil {
		_ = b.Close()
		return nil, nil, fmt.Errorf("engine %s keeps no locks", d.Name)
	}
	return b.Locks, b.Close, nil
}

func list(names []string) string {
	if len(names) == 0 {
		return "none linked"
	}
	return strings.Join(names, ", ")
}

// validScheme says whether s is a URL scheme (RFC 3986): a letter, then
// letters, digits, '+', '-', '.'.
func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}

// isWindowsPath says whether s is a drive-letter path (C:\x or C:/x).
func isWindowsPath(s string) bool {
	return len(s) >= 3 && s[1] == ':' && (s[2] == '\\' || s[2] == '/') && validScheme(s[:1])
}

// redactURLError is err's message without the URL it quotes, which may
// hold a password.
func redactURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return "malformed"
}

// ConfigError is an error in what the caller gave or its environment holds
// (no region, no table, no connection string), not in the engine: the CLI
// reports it as a usage error.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }
