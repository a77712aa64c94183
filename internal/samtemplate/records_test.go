package samtemplate_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The grants by record kind: infra/iam-by-record.md says which role may
// read and write which record kinds (by partition key prefix), and the
// template's policies must say the same with dynamodb:LeadingKeys.

// DynamoDB actions on items, by what they do; other actions on the table
// carry no partition key.
var (
	itemReads   = []string{"dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:ConditionCheckItem"}
	itemWrites  = []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}
	tableLevel  = []string{"dynamodb:DescribeTable", "dynamodb:CreateTable", "dynamodb:UpdateTimeToLive", "dynamodb:DescribeTimeToLive"}
	accessKinds = []string{"read", "write"}
)

// recordGrants is what infra/iam-by-record.md says.
type recordGrants struct {
	prefixes []string                       // the record kinds' pk prefixes
	grants   map[string]map[string][]string // role → read|write → prefixes
	resource map[string]string              // role → its resource in the template
}

// markdownTable returns the rows (header first, the separator dropped) of
// the first table after the heading in doc.
func markdownTable(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	_, rest, found := strings.Cut(doc, "\n"+heading+"\n")
	require.True(t, found, "no heading %q", heading)
	var rows [][]string
	for line := range strings.Lines(rest) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		if strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue // the separator
		}
		rows = append(rows, cells)
	}
	require.GreaterOrEqual(t, len(rows), 2, "%s: no table", heading)
	return rows
}

func code(cell string) string { return strings.Trim(cell, "`") }

func readRecordGrants(t *testing.T) recordGrants {
	t.Helper()
	b := setup(t)
	raw, err := os.ReadFile(filepath.Join(b.root, "infra", "iam-by-record.md"))
	require.NoError(t, err)
	doc := string(raw)
	g := recordGrants{grants: map[string]map[string][]string{}, resource: map[string]string{}}

	records := markdownTable(t, doc, "## Records by role")
	header := records[0]
	require.GreaterOrEqual(t, len(header), 3)
	require.Equal(t, []string{"record", "`pk` prefix"}, header[:2])
	roles := header[2:]
	for _, role := range roles {
		g.grants[role] = map[string][]string{}
	}
	for _, row := range records[1:] {
		require.Len(t, row, len(header), "%v", row)
		prefix := code(row[1])
		require.True(t, strings.HasSuffix(prefix, "#") && !strings.Contains(strings.TrimSuffix(prefix, "#"), "#"), "prefix %q", prefix)
		g.prefixes = append(g.prefixes, prefix)
		for i, role := range roles {
			cell := row[2+i]
			if cell == "—" || cell == "-" {
				continue
			}
			for _, kind := range strings.Split(cell, ",") {
				kind = strings.TrimSpace(kind)
				require.Contains(t, accessKinds, kind, "record %s, role %s: %q", row[0], role, cell)
				g.grants[role][kind] = append(g.grants[role][kind], prefix)
			}
		}
	}

	for _, row := range markdownTable(t, doc, "## Roles in the template")[1:] {
		require.Len(t, row, 3, "%v", row)
		require.Contains(t, roles, row[0], "role %s is not a column of the records table", row[0])
		g.resource[row[0]] = code(row[2])
	}
	require.ElementsMatch(t, roles, slices.Collect(maps.Keys(g.resource)), "every role has its template resource")
	return g
}

// The prefixes are those of the table's record layout
// (infra/dynamodb-table.md), and the roles' accesses are those of the
// code (TestCallsAreGranted checks the calls against the template).
func TestRecordGrantsDoc(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := readRecordGrants(t)
	raw, err := os.ReadFile(filepath.Join(b.root, "infra", "dynamodb-table.md"))
	require.NoError(t, err)
	var layout []string
	for _, row := range markdownTable(t, string(raw), "## Records")[1:] {
		pk := code(row[1])
		i := strings.Index(pk, "#")
		require.Positive(t, i, "record %s: pk %q has no prefix", row[0], pk)
		layout = append(layout, pk[:i+1])
	}
	require.ElementsMatch(t, layout, g.prefixes, "infra/iam-by-record.md lists the record kinds of infra/dynamodb-table.md")

	// What the issue asks of the roles.
	require.NotContains(t, g.grants["consumer"]["write"], "LEASE#", "the consumer writes no lease")
	require.NotContains(t, g.grants["coordinator"]["write"], "EFFECT#", "the coordinator writes no effect")
}

// checkRecordGrants checks every policy of tpl against g: item actions are
// granted with a ForAllValues:StringLike dynamodb:LeadingKeys condition
// whose prefixes, per holder and kind of access, are exactly those g
// gives the role the holder is; holders that are no role of g get no item
// action; no action reaches items without a partition key.
func checkRecordGrants(t *testing.T, tpl map[string]any, g recordGrants) {
	t.Helper()
	roleOf := map[string]string{} // template resource → role
	for role, res := range g.resource {
		roleOf[res] = role
		typ := at(t, tpl, "Resources", res, "Type")
		require.Contains(t, []any{"AWS::IAM::Role", "AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"}, typ, "role %s: %s", role, res)
	}
	tables := resourcesOf(t, tpl, "AWS::DynamoDB::Table")

	for holder, sts := range policyStatements(t, tpl) {
		got := map[string]map[string]bool{"read": {}, "write": {}}
		for _, st := range sts {
			var kinds []string
			for _, a := range st.actions {
				if !strings.HasPrefix(strings.ToLower(a), "dynamodb:") && a != "*" {
					continue
				}
				require.NotContains(t, a, "*", "%s: wildcard DynamoDB action %q", holder, a)
				require.NotContains(t, a, "?", "%s: wildcard DynamoDB action %q", holder, a)
				switch {
				case slices.Contains(itemReads, a):
					kinds = append(kinds, "read")
				case slices.Contains(itemWrites, a):
					kinds = append(kinds, "write")
				case slices.Contains(tableLevel, a):
				default:
					t.Fatalf("%s: %s is not addressed by partition key (dynamodb:LeadingKeys would not hold it): grant none such", holder, a)
				}
			}
			if len(kinds) == 0 {
				continue
			}
			role, known := roleOf[holder]
			require.True(t, known, "%s grants DynamoDB item actions but is no role of infra/iam-by-record.md", holder)
			require.NotNil(t, st.leadingKeys, "%s (%s): item actions %v without a ForAllValues:StringLike dynamodb:LeadingKeys condition", holder, role, st.actions)
			for _, r := range st.resources {
				id, attr, ok := refTo(r)
				require.True(t, ok && attr == "Arn" && tables[id] != nil, "%s: item actions on %v, not on the stack's table", holder, r)
			}
			for _, p := range st.leadingKeys {
				prefix, isPrefix := strings.CutSuffix(p, "*")
				require.True(t, isPrefix && slices.Contains(g.prefixes, prefix),
					"%s (%s): LeadingKeys pattern %q is not <prefix>* of a record kind (%v)", holder, role, p, g.prefixes)
				for _, k := range kinds {
					got[k][prefix] = true
				}
			}
		}
		role, known := roleOf[holder]
		if !known {
			continue
		}
		for _, k := range accessKinds {
			require.ElementsMatch(t, g.grants[role][k], slices.Collect(maps.Keys(got[k])),
				"%s (%s): the record kinds it may %s, per infra/iam-by-record.md", holder, role, k)
		}
	}
	for role, res := range g.resource {
		_, held := policyStatements(t, tpl)[res]
		require.True(t, held, "role %s: %s grants nothing", role, res)
	}
}

func TestRecordGrants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	checkRecordGrants(t, b.tpl, readRecordGrants(t))
}

func TestStringLike(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"LEASE#*", "LEASE#fx", true},
		{"LEASE#*", "LEASE#", true},
		{"LEASE#*", "EFFECT#fx#k", false},
		{"LEASE#*", "LEASE", false},
		{"RUN#?x", "RUN#fx", true},
		{"*#fx", "LEASE#fx", true},
		{"", "", true},
	} {
		require.Equal(t, c.want, stringLike(c.pattern, c.s), fmt.Sprintf("%q ~ %q", c.s, c.pattern))
	}
}
