package ledger

import "github.com/batonhq/baton"

// RunID and ItemKey are the public vocabulary's (package baton); the
// ledger keys its records by them.
type (
	RunID   = baton.RunID
	ItemKey = baton.ItemKey
)

// ParseRunID parses the string form of a RunID (see baton.ParseRunID).
func ParseRunID(s string) (RunID, error) { return baton.ParseRunID(s) }

// ParseItemKey parses the string form of an ItemKey (see baton.ParseItemKey).
func ParseItemKey(s string) (ItemKey, error) { return baton.ParseItemKey(s) }

// ValidName returns an error naming what is wrong when s is not a valid job
// or asset name (see baton.ValidName).
func ValidName(what, s string) error { return baton.ValidName(what, s) }
