package schedule

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrInvalid is matched, with errors.Is, by every error Parse returns.
var ErrInvalid = errors.New("invalid schedule expression")

// ErrTooManyTicks is wrapped by the error Ticks returns when a range holds
// more ticks than the caller allows.
var ErrTooManyTicks = errors.New("too many ticks")

// ParseError reports an invalid expression. Its text starts with the
// expression, quoted unless it has the form rate(...) or cron(...), then
// names the cron field at fault, if any, and what is wrong.
type ParseError struct {
	Expr  string // the expression as given to Parse
	Field int    // the cron field at fault, 1-6; 0 when not one field
	Msg   string // what is wrong, starting with the offending text if any
}

func (e *ParseError) Error() string {
	expr := e.Expr
	if kind(expr) == "" {
		expr = strconv.Quote(expr)
	}
	if e.Field > 0 && e.Field <= len(cronFields) {
		return fmt.Sprintf("%s: field %d (%s) %s", expr, e.Field, cronFields[e.Field-1].name, e.Msg)
	}
	return expr + ": " + e.Msg
}

// Is reports whether target is ErrInvalid.
func (e *ParseError) Is(target error) bool { return target == ErrInvalid }
