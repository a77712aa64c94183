package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton"
)

// PageItems is the most items a page holds. It equals the shard size of
// package fanin, so that a page is a shard.
const PageItems = 64

// MaxPageBytes bounds a page's encoded items (EncodePageItems): with its
// key and attributes a page record stays well under DynamoDB's 400 KB
// item limit.
const MaxPageBytes = 350_000

// MaxPayload is the largest payload an item may carry inline: 200 KiB
// (baton.MaxPayload).
const MaxPayload = baton.MaxPayload

// PageItem is one item of a page: its name (an asset name, see
// baton.ValidName) and its payload, nil when it has none.
type PageItem struct {
	Name    string
	Payload []byte
}

// Page is one stored page of a run's item list.
type Page struct {
	Run   RunID
	Index int
	Items []PageItem
	// Final marks the run's last page: the list ends with it.
	Final bool
	// Resume is the caller's note of where the list's source continues
	// after this page (an items function's page cursor); the store keeps
	// it as it is.
	Resume string
	// Parent is the id of the run whose finish started this page's run
	// (baton.Chain), in its string form; "" for none. Every page of a
	// run carries it, so that any page read tells it.
	Parent string
	At     time.Time // when it was written
}

// PutPageParams are the inputs of Store.PutPage.
type PutPageParams struct {
	Run    RunID
	Index  int
	Items  []PageItem
	Final  bool
	Resume string
	Parent string
	Now    time.Time
}

// ErrBadPage matches every error CheckPage and DecodePageItems return.
var ErrBadPage = errors.New("bad item page")

// CheckPage reports what is wrong with a page before it is written, naming
// it: a negative index, more than PageItems items, no items on a page that
// is not the final page 0, a name that is empty, longer than 64 bytes or not
// UTF-8, names not in strictly ascending order, a payload over
// MaxPayload, or items that encode to more than MaxPageBytes. Adapters
// call it first and write nothing when it fails.
func CheckPage(p PutPageParams) error {
	subject := fmt.Sprintf("page %d of %s", p.Index, p.Run)
	switch {
	case p.Index < 0:
		return fmt.Errorf("%w: %s: negative index", ErrBadPage, subject)
	case len(p.Items) > PageItems:
		return fmt.Errorf("%w: %s: %d items, at most %d", ErrBadPage, subject, len(p.Items), PageItems)
	case len(p.Items) == 0 && !(p.Final && p.Index == 0):
		return fmt.Errorf("%w: %s: no items (only an empty list's final page 0 may be empty)", ErrBadPage, subject)
	case len(p.Resume) > 1024:
		return fmt.Errorf("%w: %s: resume note of %d bytes, at most 1024", ErrBadPage, subject, len(p.Resume))
	case len(p.Parent) > 256:
		return fmt.Errorf("%w: %s: parent of %d bytes, at most 256", ErrBadPage, subject, len(p.Parent))
	}
	size := 0
	for i, it := range p.Items {
		if it.Name == "" || len(it.Name) > 64 || !utf8.ValidString(it.Name) {
			return fmt.Errorf("%w: %s: item %d: name %s is empty, longer than 64 bytes or not UTF-8", ErrBadPage, subject, i, strconv.Quote(cut(it.Name)))
		}
		if i > 0 && p.Items[i-1].Name >= it.Name {
			return fmt.Errorf("%w: %s: item %s follows %s: names must be in strictly ascending order", ErrBadPage, subject,
				strconv.Quote(it.Name), strconv.Quote(p.Items[i-1].Name))
		}
		if len(it.Payload) > MaxPayload {
			return fmt.Errorf("%w: %s: item %s: payload of %d bytes, at most %d", ErrBadPage, subject, strconv.Quote(it.Name), len(it.Payload), MaxPayload)
		}
		size += itemSize(it)
	}
	if size+1 > MaxPageBytes {
		return fmt.Errorf("%w: %s: items encode to %d bytes, at most %d", ErrBadPage, subject, size+1, MaxPageBytes)
	}
	return nil
}

// PageItemSize is the number of bytes it adds to a page's encoding.
func PageItemSize(it PageItem) int { return itemSize(it) }

func itemSize(it PageItem) int {
	return uvarintLen(len(it.Name)) + len(it.Name) + uvarintLen(len(it.Payload)) + len(it.Payload)
}

func uvarintLen(n int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], uint64(n))
}

func cut(s string) string {
	if len(s) > 80 {
		return s[:80]
	}
	return s
}

// pageFormat is the version byte of EncodePageItems.
const pageFormat = 1

// EncodePageItems is the stored form of a page's items, the same on every
// adapter: a version byte (1), then per item its name's length (uvarint),
// the name, its payload's length (uvarint) and the payload. A later
// version gets a new version byte; DecodePageItems keeps reading 1.
func EncodePageItems(items []PageItem) []byte {
	size := 1
	for _, it := range items {
		size += itemSize(it)
	}
	b := make([]byte, 0, size)
	b = append(b, pageFormat)
	for _, it := range items {
		b = binary.AppendUvarint(b, uint64(len(it.Name)))
		b = append(b, it.Name...)
		b = binary.AppendUvarint(b, uint64(len(it.Payload)))
		b = append(b, it.Payload...)
	}
	return b
}

// DecodePageItems reads EncodePageItems' form. Every error matches
// ErrBadPage and says what is wrong and at which byte. A payload of zero
// bytes decodes as nil.
func DecodePageItems(b []byte) ([]PageItem, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty encoding", ErrBadPage)
	}
	if b[0] != pageFormat {
		return nil, fmt.Errorf("%w: format %d, want %d", ErrBadPage, b[0], pageFormat)
	}
	var items []PageItem
	off := 1
	field := func(what string, limit int) ([]byte, error) {
		n, w := binary.Uvarint(b[off:])
		if w <= 0 || w != uvarintLen(int(min(n, 1<<40))) {
			return nil, fmt.Errorf("%w: item %d: bad %s length at byte %d (not a minimal uvarint)", ErrBadPage, len(items), what, off)
		}
		if n > uint64(limit) || n > uint64(len(b)-off-w) {
			return nil, fmt.Errorf("%w: item %d: %s length %d at byte %d exceeds the limit or the encoding", ErrBadPage, len(items), what, n, off)
		}
		off += w
		v := b[off : off+int(n)]
		off += int(n)
		return v, nil
	}
	for off < len(b) {
		if len(items) == PageItems {
			return nil, fmt.Errorf("%w: more than %d items", ErrBadPage, PageItems)
		}
		name, err := field("name", 64)
		if err != nil {
			return nil, err
		}
		payload, err := field("payload", MaxPayload)
		if err != nil {
			return nil, err
		}
		it := PageItem{Name: string(name)}
		if len(payload) > 0 {
			it.Payload = append([]byte(nil), payload...)
		}
		if it.Name == "" || !utf8.ValidString(it.Name) {
			return nil, fmt.Errorf("%w: item %d: name is empty or not UTF-8", ErrBadPage, len(items))
		}
		if n := len(items); n > 0 && items[n-1].Name >= it.Name {
			return nil, fmt.Errorf("%w: item %d: name %s follows %s: not in strictly ascending order", ErrBadPage, n, strconv.Quote(it.Name), strconv.Quote(items[n-1].Name))
		}
		items = append(items, it)
	}
	return items, nil
}

// Names returns the names of the page's items, in order.
func (p Page) Names() []string {
	names := make([]string, len(p.Items))
	for i, it := range p.Items {
		names[i] = it.Name
	}
	return names
}

// Find returns the item of p called name, by binary search.
func (p Page) Find(name string) (PageItem, bool) {
	lo, hi := 0, len(p.Items)
	for lo < hi {
		m := (lo + hi) / 2
		if p.Items[m].Name < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(p.Items) && p.Items[lo].Name == name {
		return p.Items[lo], true
	}
	return PageItem{}, false
}

// digestVersion prefixes DigestItems' digests: a later algorithm gets a
// new prefix, and a digest of another prefix compares as not known.
const digestVersion = "v1:"

// DigestItems is the digest of an item list (OpenRunParams.Digest): "v1:"
// and the SHA-256, in hex, of the items in the order given (a
// submission's, sorted by name), each as its name's length (uvarint), the
// name, its payload's length (uvarint) and the payload, as a page encodes
// them. A payload of zero bytes and none digest alike.
func DigestItems(items []PageItem) string {
	h := sha256.New()
	var b []byte
	for _, it := range items {
		b = binary.AppendUvarint(b[:0], uint64(len(it.Name)))
		b = append(b, it.Name...)
		b = binary.AppendUvarint(b, uint64(len(it.Payload)))
		h.Write(b)
		h.Write(it.Payload)
	}
	return digestVersion + hex.EncodeToString(h.Sum(nil))
}

// DigestsDiffer reports whether two digests of DigestItems name different
// lists; false when either is not known ("", as on a run opened before
// digests were kept, or of another version).
func DigestsDiffer(a, b string) bool {
	known := func(d string) bool { return strings.HasPrefix(d, digestVersion) }
	return known(a) && known(b) && a != b
}
