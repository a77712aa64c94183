package calls

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/localaws"
)

func TestMain(m *testing.M) {
	code := m.Run()
	localaws.Stop()
	os.Exit(code)
}

var seq atomic.Int64

// uniqueName is a queue or table name no other test of this binary, or of
// a run before it, uses.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, seq.Add(1))
}
