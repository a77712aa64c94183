package samtemplate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonhq/baton/internal/samtemplate"
)

func TestDecodeIntrinsics(t *testing.T) {
	t.Parallel()
	doc := `
a: !Ref Table
b: !GetAtt Queue.Arn
c: !GetAtt [Queue, QueueName]
d: !Sub "${Table.Arn}/index/*"
e: !Sub ["${X}-y", {X: !Ref Y}]
f: !If [HasTopic, [!Ref Topic], !Ref AWS::NoValue]
g: !Not [!Equals [!Ref P, ""]]
h: !Join ["", [a, !Ref B]]
i: !Condition HasTopic
n: 5
s: "5"
t: true
z: ~
anchor: &x [1, 2]
alias: *x
`
	got, err := samtemplate.Decode([]byte(doc))
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"a":      map[string]any{"Ref": "Table"},
		"b":      map[string]any{"Fn::GetAtt": []any{"Queue", "Arn"}},
		"c":      map[string]any{"Fn::GetAtt": []any{"Queue", "QueueName"}},
		"d":      map[string]any{"Fn::Sub": "${Table.Arn}/index/*"},
		"e":      map[string]any{"Fn::Sub": []any{"${X}-y", map[string]any{"X": map[string]any{"Ref": "Y"}}}},
		"f":      map[string]any{"Fn::If": []any{"HasTopic", []any{map[string]any{"Ref": "Topic"}}, map[string]any{"Ref": "AWS::NoValue"}}},
		"g":      map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "P"}, ""}}}},
		"h":      map[string]any{"Fn::Join": []any{"", []any{"a", map[string]any{"Ref": "B"}}}},
		"i":      map[string]any{"Condition": "HasTopic"},
		"n":      int64(5),
		"s":      "5",
		"t":      true,
		"z":      nil,
		"anchor": []any{int64(1), int64(2)},
		"alias":  []any{int64(1), int64(2)},
	}, got)
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"not a mapping":   "- a\n- b\n",
		"bad GetAtt":      "a: !GetAtt Queue\n",
		"Ref of a list":   "a: !Ref [x]\n",
		"repeated key":    "a: 1\na: 2\n",
		"invalid YAML":    "a: [1, 2\n",
		"empty document":  "",
		"merge key":       "x: &x {a: 1}\ny:\n  <<: *x\n",
		"non-scalar key":  "? [a]\n: 1\n",
		"bad int in list": "a: !!int x\n",
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := samtemplate.Decode([]byte(doc))
			require.Error(t, err)
		})
	}
}
