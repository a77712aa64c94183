package sqlite

import (
	"context"
	"database/sql/driver"
	"strings"
	"unicode"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Every statement the store runs under a recording span is a span of its
// own, a child of that span (the step of the coordinator or of an item
// that ran it), named and attributed as pgx's tracer names PostgreSQL's
// statements: the statement's operation ("SELECT", "INSERT", "UPDATE"…),
// db.system.name "sqlite", db.operation.name and db.query.text (the
// statement's text, never its arguments). The tracing sits in a thin
// wrapper of the driver's connections, so reads, the writer's statements
// and prepared statements are all seen; a statement under a context whose
// span does not record (no provider, not sampled, or the writer's own
// BEGIN and COMMIT, which run under no caller's context) starts no span,
// and costs one check.

// scopeName is the instrumentation scope of the statements' spans.
const scopeName = "github.com/batonhq/baton/internal/sqlite"

var (
	attrSystem   = attribute.Key("db.system.name").String("sqlite")
	keyQueryText = attribute.Key("db.query.text")
	keyOperation = attribute.Key("db.operation.name")
	startOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
)

// tracedConnector connects through base and wraps each connection.
type tracedConnector struct {
	base   driver.Connector
	tracer trace.Tracer
}

func newTracedConnector(base driver.Connector, tp trace.TracerProvider) *tracedConnector {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &tracedConnector{base: base, tracer: tp.Tracer(scopeName)}
}

func (c *tracedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tracedConn{conn: conn, tracer: c.tracer}, nil
}

func (c *tracedConnector) Driver() driver.Driver { return c.base.Driver() }

// start starts a statement's span when ctx's span records; else it
// returns ctx and nil.
func start(ctx context.Context, tracer trace.Tracer, query string) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	op := operation(query)
	ctx, span := tracer.Start(ctx, op, startOptions...)
	if span.IsRecording() { // not with a no-op provider under another's span
		span.SetAttributes(attrSystem, keyOperation.String(op), keyQueryText.String(strings.TrimSpace(query)))
	}
	return ctx, span
}

// end ends span (nil: none started) with err's status.
func end(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil && err != driver.ErrSkip {
		// The driver's message names the table or constraint, never an
		// argument's value.
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// operation is a statement's first word, upper-cased ("UNKNOWN" when it
// has none), as otelpgx names its spans.
func operation(query string) string {
	for {
		query = strings.TrimLeftFunc(query, unicode.IsSpace)
		if !strings.HasPrefix(query, "--") {
			break
		}
		_, rest, ok := strings.Cut(query, "\n")
		if !ok {
			return "UNKNOWN"
		}
		query = rest
	}
	word := query
	if i := strings.IndexFunc(query, func(r rune) bool { return !unicode.IsLetter(r) }); i >= 0 {
		word = query[:i]
	}
	if word == "" {
		return "UNKNOWN"
	}
	return strings.ToUpper(word)
}

// tracedConn wraps one connection of the driver (modernc.org/sqlite's),
// passing on each of the interfaces database/sql looks for that it has.
type tracedConn struct {
	conn   driver.Conn
	tracer trace.Tracer
}

var (
	_ driver.Conn               = (*tracedConn)(nil)
	_ driver.ConnBeginTx        = (*tracedConn)(nil)
	_ driver.ConnPrepareContext = (*tracedConn)(nil)
	_ driver.ExecerContext      = (*tracedConn)(nil)
	_ driver.QueryerContext     = (*tracedConn)(nil)
	_ driver.Pinger             = (*tracedConn)(nil)
	_ driver.SessionResetter    = (*tracedConn)(nil)
	_ driver.Validator          = (*tracedConn)(nil)
)

func (c *tracedConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *tracedConn) Close() error { return c.conn.Close() }

//lint:ignore SA1019 driver.Conn requires Begin; database/sql calls BeginTx.
func (c *tracedConn) Begin() (driver.Tx, error) { return c.conn.Begin() }

func (c *tracedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	//lint:ignore SA1019 the driver's fallback, as database/sql's.
	return c.conn.Begin()
}

func (c *tracedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := c.conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = c.conn.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	return &tracedStmt{stmt: st, query: query, tracer: c.tracer}, nil
}

func (c *tracedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	ctx, span := start(ctx, c.tracer, query)
	r, err := e.ExecContext(ctx, query, args)
	end(span, err)
	return r, err
}

func (c *tracedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	ctx, span := start(ctx, c.tracer, query)
	rows, err := q.QueryContext(ctx, query, args)
	if err != nil || span == nil {
		end(span, err)
		return rows, err
	}
	return &tracedRows{Rows: rows, span: span}, nil
}

func (c *tracedConn) Ping(ctx context.Context) error {
	if p, ok := c.conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *tracedConn) ResetSession(ctx context.Context) error {
	if r, ok := c.conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *tracedConn) IsValid() bool {
	if v, ok := c.conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// tracedStmt wraps a prepared statement.
type tracedStmt struct {
	stmt   driver.Stmt
	query  string
	tracer trace.Tracer
}

var (
	_ driver.StmtExecContext  = (*tracedStmt)(nil)
	_ driver.StmtQueryContext = (*tracedStmt)(nil)
)

func (s *tracedStmt) Close() error  { return s.stmt.Close() }
func (s *tracedStmt) NumInput() int { return s.stmt.NumInput() }

//lint:ignore SA1019 driver.Stmt requires Exec; database/sql calls ExecContext.
func (s *tracedStmt) Exec(args []driver.Value) (driver.Result, error) { return s.stmt.Exec(args) }

//lint:ignore SA1019 driver.Stmt requires Query; database/sql calls QueryContext.
func (s *tracedStmt) Query(args []driver.Value) (driver.Rows, error) { return s.stmt.Query(args) }

func (s *tracedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := s.stmt.(driver.StmtExecContext)
	if !ok {
		return nil, driver.ErrSkip // not reached: the driver's statements have it
	}
	ctx, span := start(ctx, s.tracer, s.query)
	r, err := e.ExecContext(ctx, args)
	end(span, err)
	return r, err
}

func (s *tracedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, driver.ErrSkip // not reached: the driver's statements have it
	}
	ctx, span := start(ctx, s.tracer, s.query)
	rows, err := q.QueryContext(ctx, args)
	if err != nil || span == nil {
		end(span, err)
		return rows, err
	}
	return &tracedRows{Rows: rows, span: span}, nil
}

// tracedRows ends a query's span when its rows are closed: a SQLite
// query runs as its rows are read.
type tracedRows struct {
	driver.Rows
	span trace.Span
}

func (r *tracedRows) Close() error {
	err := r.Rows.Close()
	end(r.span, nil)
	return err
}
