package archtest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// httpPackages are what an HTTP container links for the handlers: they
// run on any cloud, so they link no AWS SDK (the Lambda event types of
// package lambdaevent, plain structs, are allowed).
var httpPackages = []string{"./internal/httpapp", "./batonhttp"}

func awsSDK(path string) bool {
	return strings.HasPrefix(path, "github.com/aws/aws-sdk-go") || strings.HasPrefix(path, "github.com/aws/smithy-go")
}

func TestHTTPLinksNoAWSSDK(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for _, pkg := range httpPackages {
		var bad []string
		for _, d := range listDeps(t, root, pkg, "CGO_ENABLED=0") {
			if awsSDK(d) {
				bad = append(bad, d)
			}
		}
		require.Empty(t, bad, "%s links the AWS SDK", pkg)
	}
	// The check can fail: the CLI links it.
	deps := listDeps(t, root, "./batoncli")
	var seen bool
	for _, d := range deps {
		seen = seen || awsSDK(d)
	}
	require.True(t, seen, "batoncli links the AWS SDK, so the check sees it")
}
