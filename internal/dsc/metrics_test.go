package dsc

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCollector(t *testing.T) {
	c := Collector(func() Stats {
		return Stats{Master: true, Tapped: 7, Retransmitted: 2, Injected: 3, Rebuilds: 1, Rebuilt: 4}
	})
	want := `
# HELP mure_single_address_master 1 while this node places SYNs (the SYN master).
# TYPE mure_single_address_master gauge
mure_single_address_master 1
# HELP mure_single_address_rebuilt_total Half-open connections those rebuilds found.
# TYPE mure_single_address_rebuilt_total counter
mure_single_address_rebuilt_total 4
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "mure_single_address_master", "mure_single_address_rebuilt_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "mure_single_address_syns_total"); n != 9 {
		t.Fatalf("%d SYN event series, want 9", n)
	}
}
