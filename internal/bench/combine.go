package bench

import (
	"errors"
	"fmt"
)

// Combine puts the groups of several reports of the same scenario into one,
// each series prefixed with its report's label (e.g. "2 servers read own"),
// so that one chart or table sets them side by side.
func Combine(reports []*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, errors.New("nothing to combine")
	}
	first := reports[0]
	out := *first
	out.Label, out.Groups, out.Nodes = "", nil, nil
	for i, r := range reports {
		if r.Scenario != first.Scenario || r.Metric != first.Metric {
			return nil, fmt.Errorf("report %d is %s (%s), the first is %s (%s): cannot combine", i+1, r.Scenario, r.Metric, first.Scenario, first.Metric)
		}
		label := r.Label
		if label == "" {
			label = fmt.Sprintf("#%d", i+1)
		}
		out.Nodes = append(out.Nodes, r.Nodes...)
		if r.URL != first.URL {
			out.URL = "" // conn-rate reports of different pages
		}
		for _, g := range r.Groups {
			c := *g
			c.Series = label + " " + g.Series
			out.Groups = append(out.Groups, &c)
		}
	}
	return &out, nil
}
