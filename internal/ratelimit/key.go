package ratelimit

import (
	"net/url"
	"strings"
)

// KeyedName is the record name of key of the keyed limit called name:
// name, '#', and key query-escaped. Limit names are baton.ValidName
// names, which have no '#', and the escaping leaves none in the key, so
// a key's records never collide with an unkeyed limit's, another key's or
// another limit's, whatever the key's text (slashes, '#', spaces,
// unicode); and the escaping is reversible (KeyOf).
func KeyedName(name, key string) string {
	return name + "#" + url.QueryEscape(key)
}

// KeyOf splits a record name made by KeyedName into the limit's name and
// the key; ok is false for an unkeyed limit's name.
func KeyOf(record string) (name, key string, ok bool) {
	name, esc, ok := strings.Cut(record, "#")
	if !ok {
		return record, "", false
	}
	key, err := url.QueryUnescape(esc)
	if err != nil {
		return name, esc, true
	}
	return name, key, true
}
