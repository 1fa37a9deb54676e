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

func TestObjectAndArray(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(`{"skip": {"deep": [1, 2]}, "items": [{"n": 1}, {"n": 2}], "next": "x"}`))
	var ns []int
	var next string
	err := Object(dec, func(key string) (bool, error) {
		switch key {
		case "items":
			return true, Array(dec, func(v *struct{ N int }) error { ns = append(ns, v.N); return nil })
		case "next":
			return true, dec.Decode(&next)
		}
		return false, nil
	})
	if err != nil || len(ns) != 2 || ns[0] != 1 || ns[1] != 2 || next != "x" {
		t.Fatalf("Object: %v, items %v, next %q", err, ns, next)
	}
	if err := Array(json.NewDecoder(strings.NewReader(`{}`)), func(*int) error { return nil }); err == nil {
		t.Error("Array accepted an object")
	}
	if err := Object(json.NewDecoder(strings.NewReader(`{"a": 1`)), func(string) (bool, error) { return false, nil }); err == nil {
		t.Error("Object accepted a cut object")
	}
}
