package awsdynamodb_test

import (
	"os"
	"testing"

	"github.com/batonhq/baton/internal/localaws"
)

func TestMain(m *testing.M) {
	code := m.Run()
	localaws.Stop()
	os.Exit(code)
}
