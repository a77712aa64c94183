package lambdaapp

import "github.com/batonhq/baton/internal/exec"

// CoreOf returns the core h was built on at construction.
func CoreOf(h *ConsumerHandler) *exec.Core { return h.built }
