package jsonstream

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSkipAndExpect(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(`[{"a": [1, {"b": [2, 3]}], "c": "d"}, 7, "x"]`))
	if err := Expect(dec, '['); err != nil {
		t.Fatal(err)
	}
	if err := Skip(dec); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := dec.Decode(&n); err != nil || n != 7 {
		t.Fatalf("after skipping the object: %d, %v; want 7", n, err)
	}
	if err := Skip(dec); err != nil { // a scalar is one token
		t.Fatal(err)
	}
	if err := Expect(dec, ']'); err != nil {
		t.Fatal(err)
	}
	if err := Expect(json.NewDecoder(strings.NewReader(`{}`)), '['); err == nil {
		t.Error("Expect accepted { for [")
	}
	if err := Skip(json.NewDecoder(strings.NewReader(`{"a": [1,`))); err == nil {
		t.Error("Skip accepted a cut value")
	}
}
