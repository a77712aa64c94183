// Package postgres links the PostgreSQL engine: every store and queue in one database (name "postgres", URL postgres://… or postgresql://…).
// Import it for its effect only:
//
//	import _ "github.com/batonhq/baton/engines/postgres"
package postgres

import _ "github.com/batonhq/baton/internal/backend/postgresbackend" // registers the engine
