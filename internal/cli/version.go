package cli

import (
	"context"
	"runtime/debug"

	"github.com/spf13/pflag"
)

// version is baton's module version as the build recorded it: the tag a
// `go install …@version` or a user's go.mod selected, "(devel)" in a
// checkout, with the VCS revision when there is one.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	if info.Main.Path != modulePath {
		// baton is a dependency of the user's own binary.
		for _, d := range info.Deps {
			if d.Path == modulePath {
				v = d.Version
				if d.Replace != nil {
					v += " (replaced by " + d.Replace.Path + " " + d.Replace.Version + ")"
				}
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " " + rev + modified
	}
	return v + ", " + info.GoVersion
}

// modulePath is baton's module.
const modulePath = "github.com/batonhq/baton"

const versionSynopsis = `version

Prints baton's version (the module version the binary was built with, the
VCS revision when known) and the Go version. --version says the same.`

func versionCommand() command {
	return command{synopsis: versionSynopsis, summary: "print baton's version", example: "  baton version\n  baton version --json",
		defineFunc: func(e *env, _ *pflag.FlagSet) runFunc {
			return func(context.Context, []string) error {
				e.sayf("baton %s\n", version())
				e.set("version", version())
				return nil
			}
		}}
}
