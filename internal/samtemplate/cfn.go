// Package samtemplate reads the AWS SAM template (template.yaml at the
// repository root) into plain Go values, so that tests can check its
// invariants against the code: the schedule against the job definition,
// the environment against what the functions read, the IAM policies, the
// queues' redrive and visibility settings.
//
// CloudFormation's short-form tags become the long form's one-key maps:
// !Ref X → {"Ref": "X"}, !Condition X → {"Condition": "X"},
// !GetAtt A.B → {"Fn::GetAtt": ["A", "B"]}, and any other !Name v →
// {"Fn::Name": v} (!Sub, !If, !Equals, !Not, !Join, !Select, …).
package samtemplate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads and decodes the template at path.
func Load(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load template: %w", err)
	}
	t, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("load template %s: %w", path, err)
	}
	return t, nil
}

// Decode decodes a CloudFormation YAML document whose root is a mapping.
func Decode(b []byte) (map[string]any, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("parse YAML: %w", err)
	}
	v, err := value(&doc)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the document's root is not a mapping")
	}
	return m, nil
}

func value(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, errors.New("empty document")
		}
		return value(n.Content[0])
	case yaml.AliasNode:
		return value(n.Alias)
	}
	if tag, ok := strings.CutPrefix(n.Tag, "!"); ok && !strings.HasPrefix(tag, "!") {
		return intrinsic(tag, n)
	}
	return plain(n)
}

// plain decodes a node with a standard (or no) tag.
func plain(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: merge keys are not CloudFormation", k.Line)
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping key is not a scalar", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: key %q repeated", k.Line, k.Value)
			}
			x, err := value(v)
			if err != nil {
				return nil, err
			}
			m[k.Value] = x
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			x, err := value(c)
			if err != nil {
				return nil, err
			}
			s = append(s, x)
		}
		return s, nil
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
}

func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!str", "!!binary":
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return b, nil
	case "!!int":
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return i, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return f, nil
	}
	return n.Value, nil
}

// intrinsic turns a short-form tag into its long form.
func intrinsic(tag string, n *yaml.Node) (any, error) {
	// The tagged node's own value, decoded as if untagged.
	untagged := *n
	untagged.Tag = ""
	if n.Kind == yaml.ScalarNode {
		untagged.Tag = "!!str"
	}
	v, err := plain(&untagged)
	if err != nil {
		return nil, err
	}
	switch tag {
	case "Ref", "Condition":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("line %d: !%s takes a scalar", n.Line, tag)
		}
		return map[string]any{tag: s}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			res, attr, found := strings.Cut(s, ".")
			if !found || res == "" || attr == "" {
				return nil, fmt.Errorf("line %d: !GetAtt %q: want Resource.Attribute", n.Line, s)
			}
			return map[string]any{"Fn::GetAtt": []any{res, attr}}, nil
		}
		return map[string]any{"Fn::GetAtt": v}, nil
	}
	return map[string]any{"Fn::" + tag: v}, nil
}
