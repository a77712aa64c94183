package awsdynamodb_test

import (
	"os"
	"testing"

	"github.com/batonhq/baton/internal/emulator"
)

func TestMain(m *testing.M) {
	code := m.Run()
	emulator.Stop()
	os.Exit(code)
}
