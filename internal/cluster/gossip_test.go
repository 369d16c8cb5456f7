package cluster

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"

	"github.com/mure-dev/mure/internal/meta"
)

// largest fills every number of v (a struct pointer) with the value of
// its kind whose JSON is longest, so that a field added later is covered.
func largest(t *testing.T, v any) {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			f.SetInt(math.MinInt64 >> (64 - f.Type().Bits()))
		case reflect.Uint, reflect.Uint64, reflect.Uint32:
			f.SetUint(math.MaxUint64 >> (64 - f.Type().Bits()))
		case reflect.Float64, reflect.Float32:
			f.SetFloat(-2.2250738585072014e-308) // 24 characters in JSON
		case reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("Load.%s is a %s: teach this test its largest value", rv.Type().Field(i).Name, f.Kind())
		}
	}
}

// memberlist caps a node's metadata at 512 bytes and silently gossips
// none when it is longer: the front door would lose every node's load.
// Every field at its largest must fit.
func TestNodeMetaFits(t *testing.T) {
	var l Load
	largest(t, &l)
	var ns []string
	for i := range 10 {
		ns = append(ns, fmt.Sprintf("namespace%d:999", i))
	}
	m := nodeMeta{
		Cluster: strings.Repeat("f", 16), // newID(8): 16 hex digits
		// The longest numeric address: an IPv4-mapped IPv6 one, bracketed.
		HTTP:     "[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]:65535",
		Load:     &l,
		Zone:     strings.Repeat("z", MaxZoneLen),
		Supports: meta.Supports{meta.NSCore: 999}.String() + "," + strings.Join(ns, ","),
		Hot:      encodeHotReads(slices.Repeat([]HotRead{{Key: 0xffffffff, PerSecond: 9_999_999}}, MaxHotReads+2)),
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > memberlist.MetaMaxSize {
		t.Fatalf("node metadata at its largest is %d bytes, over memberlist's %d: %s", len(b), memberlist.MetaMaxSize, b)
	}
	g := &gossip{metaF: func() nodeMeta { return m }}
	if got := g.NodeMeta(memberlist.MetaMaxSize); len(got) != len(b) {
		t.Fatalf("NodeMeta gave %d bytes, want %d", len(got), len(b))
	}
	t.Logf("largest node metadata: %d of %d bytes", len(b), memberlist.MetaMaxSize)
}
