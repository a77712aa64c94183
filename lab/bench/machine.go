package bench

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Machine describes the host: cores, memory, CPU model and load.
func Machine() string {
	parts := []string{fmt.Sprintf("%d cores (GOMAXPROCS %d)", runtime.NumCPU(), runtime.GOMAXPROCS(0))}
	if mem := procField("/proc/meminfo", "MemTotal"); mem != "" {
		parts = append(parts, "memory "+mem)
	}
	if model := procField("/proc/cpuinfo", "model name"); model != "" {
		parts = append(parts, model)
	}
	parts = append(parts, runtime.GOOS+"/"+runtime.GOARCH, runtime.Version(), "load "+LoadAverage())
	return strings.Join(parts, ", ")
}

// LoadAverage is the 1, 5 and 15 minute load averages, or "unknown".
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// procField returns the value of the first "name: value" line of a /proc
// file, or "".
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// SortRows orders rows by scenario, keeping the order of rows within one.
func SortRows(rows []Row) []Row {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b Row) int {
		if c := cmp.Compare(scenarioNumber(a.Scenario), scenarioNumber(b.Scenario)); c != 0 {
			return c
		}
		return strings.Compare(a.Scenario, b.Scenario)
	})
	return out
}

// scenarioNumber is the number a scenario's name starts with ("10
// contended": 10), so that rows sort 1, 2, …, 9, 10.
func scenarioNumber(s string) int {
	n, _ := strconv.Atoi(strings.SplitN(s, " ", 2)[0])
	return n
}

// The modules the bench runs in: baton's, and the lab's (lab/ below
// baton's root, a module of its own so that baton's go.mod needs none of
// the lab's dependencies).
const (
	batonModule = "github.com/batonhq/baton"
	labModule   = "github.com/batonhq/baton/lab"
)

// ModuleRoots returns the root directories of baton's module and of the
// lab module, found from the working directory: the bench's tests run in
// lab/bench, below both go.mod files, and `make bench` runs the bench
// binary at baton's root, where the lab is lab/.
func ModuleRoots() (baton, lab string, err error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	for {
		switch declaredModule(filepath.Join(dir, "go.mod")) {
		case labModule:
			if lab == "" {
				lab = dir
			}
		case batonModule:
			baton = dir
			if lab == "" {
				lab = filepath.Join(dir, "lab")
			}
			if declaredModule(filepath.Join(lab, "go.mod")) != labModule {
				return "", "", fmt.Errorf("no go.mod of %s in %s", labModule, lab)
			}
			return baton, lab, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", fmt.Errorf("no go.mod of %s at or above the working directory", batonModule)
		}
		dir = parent
	}
}

// declaredModule returns the module path a go.mod file declares, or ""
// when there is no such file or it declares none.
func declaredModule(gomod string) string {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}
