package bench

import (
	"bufio"
	"cmp"
	"errors"
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

// ModuleRoot returns the nearest directory at or above the working
// directory that holds a go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory")
		}
		dir = parent
	}
}
