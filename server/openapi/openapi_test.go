package openapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A schema's required names only properties the schema defines, itself or
// through its allOf members: a name it does not define is a contract no
// answer can be checked against (Redocly's no-required-schema-properties-undefined).
func TestRequiredPropertiesAreDefined(t *testing.T) {
	var doc any
	if err := json.Unmarshal(Document, &doc); err != nil {
		t.Fatal(err)
	}
	checked := 0
	var walk func(node any, at string)
	walk = func(node any, at string) {
		switch n := node.(type) {
		case map[string]any:
			if required, ok := n["required"].([]any); ok {
				checked++
				defined := definedProperties(t, doc, n, 0)
				for _, name := range required {
					if s, _ := name.(string); !defined[s] {
						t.Errorf("%s requires %v, which it does not define", at, name)
					}
				}
			}
			for k, v := range n {
				walk(v, at+"/"+k)
			}
		case []any:
			for i, v := range n {
				walk(v, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(doc, "#")
	if checked < 10 {
		t.Errorf("only %d schemas with required found: is the walk reading the document?", checked)
	}
}

// definedProperties are the names schema defines in its properties and in
// those of its allOf members, local $refs followed.
func definedProperties(t *testing.T, doc any, schema map[string]any, depth int) map[string]bool {
	t.Helper()
	if depth > 16 {
		t.Fatal("$ref or allOf nested too deep")
	}
	if ref, ok := schema["$ref"].(string); ok {
		return definedProperties(t, doc, resolve(t, doc, ref), depth+1)
	}
	defined := map[string]bool{}
	if props, ok := schema["properties"].(map[string]any); ok {
		for name := range props {
			defined[name] = true
		}
	}
	if all, ok := schema["allOf"].([]any); ok {
		for _, member := range all {
			if m, ok := member.(map[string]any); ok {
				for name := range definedProperties(t, doc, m, depth+1) {
					defined[name] = true
				}
			}
		}
	}
	return defined
}

// resolve follows a local JSON pointer ("#/components/schemas/Error").
func resolve(t *testing.T, doc any, ref string) map[string]any {
	t.Helper()
	if !strings.HasPrefix(ref, "#/") {
		t.Fatalf("$ref %q is not local", ref)
	}
	node := doc
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		m, ok := node.(map[string]any)
		if !ok {
			t.Fatalf("$ref %q does not resolve", ref)
		}
		node = m[part]
	}
	m, ok := node.(map[string]any)
	if !ok {
		t.Fatalf("$ref %q does not resolve to a schema", ref)
	}
	return m
}
