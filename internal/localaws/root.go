package localaws

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// moduleRoot returns the directory holding the module's go.mod: the nearest
// one above the working directory (tests run in their package directory),
// else the one `go env GOMOD` names.
func moduleRoot() (string, error) {
	if dir, err := os.Getwd(); err == nil {
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", errors.New("no go.mod above the working directory and `go env GOMOD` failed")
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// localDir is the directory of the launcher and its node_modules.
func localDir(root string) string {
	return filepath.Join(root, "infra", "local")
}
