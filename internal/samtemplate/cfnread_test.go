package samtemplate_test

import (
	"github.com/batonhq/baton/internal/lambdaapp"
	"testing"

	"github.com/stretchr/testify/require"
)

// Reading a CloudFormation template decoded into plain values (Decode's
// long forms of the intrinsic functions, or the JSON of an expanded one).

// resourcesOf returns the template's resources of type typ, by logical id.
func resourcesOf(t *testing.T, tpl map[string]any, typ string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for id, r := range at(t, tpl, "Resources").(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

// list is v as a list: a list itself, or a one-element list of a scalar.
func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// refTo returns the logical id v refers to with !Ref or !GetAtt id.attr
// (attr "" for a Ref).
func refTo(v any) (id, attr string, ok bool) {
	m, _ := v.(map[string]any)
	if len(m) != 1 {
		return "", "", false
	}
	if r, isRef := m["Ref"].(string); isRef {
		return r, "", true
	}
	if g, isGetAtt := m["Fn::GetAtt"].([]any); isGetAtt && len(g) == 2 {
		id, ok1 := g[0].(string)
		attr, ok2 := g[1].(string)
		return id, attr, ok1 && ok2
	}
	return "", "", false
}

// policyStatements returns every IAM statement that grants permissions to
// something, by holder: a role (its inline policies and the stack's
// managed policies attached to it), a managed policy, or a policy
// attached to users or groups. Managed policies from outside the stack
// are refused: what they grant cannot be checked.
func policyStatements(t *testing.T, tpl map[string]any) map[string][]statement {
	t.Helper()
	out := map[string][]statement{}
	managed := resourcesOf(t, tpl, "AWS::IAM::ManagedPolicy")
	for id, r := range resourcesOf(t, tpl, "AWS::IAM::Role") {
		if ps, ok := lookup(r, "Properties", "Policies"); ok {
			for _, p := range ps.([]any) {
				out[id] = append(out[id], parseStatements(t, at(t, p, "PolicyDocument", "Statement"))...)
			}
		}
		if arns, ok := lookup(r, "Properties", "ManagedPolicyArns"); ok {
			for _, a := range list(arns) {
				mp, _, isRef := refTo(a)
				require.True(t, isRef && managed[mp] != nil, "role %s: managed policy %v is not the stack's own: what it grants cannot be checked", id, a)
				out[id] = append(out[id], parseStatements(t, at(t, managed[mp], "Properties", "PolicyDocument", "Statement"))...)
			}
		}
	}
	for id, r := range managed {
		sts := parseStatements(t, at(t, r, "Properties", "PolicyDocument", "Statement"))
		out[id] = append(out[id], sts...)
		if roles, ok := lookup(r, "Properties", "Roles"); ok {
			for _, role := range list(roles) {
				rid, _, isRef := refTo(role)
				require.True(t, isRef, "managed policy %s: role %v is not the stack's", id, role)
				out[rid] = append(out[rid], sts...)
			}
		}
	}
	for id, r := range resourcesOf(t, tpl, "AWS::IAM::Policy") {
		sts := parseStatements(t, at(t, r, "Properties", "PolicyDocument", "Statement"))
		out[id] = append(out[id], sts...)
		if roles, ok := lookup(r, "Properties", "Roles"); ok {
			for _, role := range list(roles) {
				rid, _, isRef := refTo(role)
				require.True(t, isRef, "policy %s: role %v is not the stack's", id, role)
				out[rid] = append(out[rid], sts...)
			}
		}
	}
	return out
}

// isBatonNamespace reports whether v, an alarm's Namespace, is baton's
// metrics namespace: a !Ref of the parameter that defaults to
// lambdaapp.DefaultNamespace (the functions' BATON_METRICS_NAMESPACE).
func isBatonNamespace(tpl map[string]any, v any) bool {
	id, attr, ok := refTo(v)
	if !ok || attr != "" {
		return false
	}
	def, _ := lookup(tpl, "Parameters", id, "Default")
	return def == lambdaapp.DefaultNamespace
}

// serviceDimension is the dimension every alarm on baton's metrics
// carries: the stack's name, as the functions' BATON_SERVICE_NAME.
var serviceDimension = map[string]any{"Name": "service", "Value": map[string]any{"Ref": "AWS::StackName"}}
