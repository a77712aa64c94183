package tickfactory_test

import (
	"testing"

	"github.com/batonhq/baton/internal/bars"
	"github.com/batonhq/baton/internal/memfake"
)

func newBars(t *testing.T) bars.Store {
	t.Helper()
	return memfake.NewBars()
}
