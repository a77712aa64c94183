package localaws

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// modulePath is the module whose root holds infra/local.
const modulePath = "github.com/batonhq/baton"

// moduleRoot returns the directory holding baton's go.mod (the module
// github.com/batonhq/baton, whose root holds infra/local): the nearest one
// at or above the working directory (tests run in their package
// directory), else at or above the go.mod `go env GOMOD` names. A go.mod of
// another module on the way, such as the lab module's (lab/go.mod), is
// passed over: the lab's tests use the same emulators.
func moduleRoot() (string, error) {
	if dir, err := os.Getwd(); err == nil {
		if root, ok := rootAbove(dir); ok {
			return root, nil
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", errors.New("no go.mod of " + modulePath + " above the working directory and `go env GOMOD` failed")
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	if root, ok := rootAbove(filepath.Dir(gomod)); ok {
		return root, nil
	}
	return "", errors.New("no go.mod of " + modulePath + " at or above " + filepath.Dir(gomod))
}

// rootAbove returns the nearest directory at or above dir whose go.mod
// declares modulePath.
func rootAbove(dir string) (string, bool) {
	for {
		if declaredModule(filepath.Join(dir, "go.mod")) == modulePath {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// declaredModule returns the module path a go.mod file declares, or ""
// when there is no such file or it declares none.
func declaredModule(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`)
		}
	}
	return ""
}

// localDir is the directory of the launcher and its node_modules.
func localDir(root string) string {
	return filepath.Join(root, "infra", "local")
}
