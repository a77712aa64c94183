// Package sqlite links the embedded engine: every store and queue in one SQLite file (name "sqlite", URL sqlite:///path/to.db).
// Import it for its effect only:
//
//	import _ "github.com/batonhq/baton/engines/sqlite"
package sqlite

import _ "github.com/batonhq/baton/internal/backend/sqlitebackend" // registers the engine
