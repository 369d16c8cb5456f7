package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Dump is points of several nodes: the answer of GET /history, of the
// peer port's /peer/history and the dashboard's data. On the wire each
// point is an array, its time then its figures in the order "fields"
// names, null for unknown:
//
//	{"fields":["cpu",...],"fine_step":1,"coarse_step":60,
//	 "nodes":{"a1b2":{"fine":[[1764000000,0.25,...],...],"coarse":[...]}}}
//
// A reader maps figures by name, so a peer with more or fewer fields is
// understood.
type Dump struct {
	Nodes map[string]NodeDump
}

// NodeDump is one node's points at both resolutions, oldest first.
type NodeDump struct {
	Fine, Coarse []Point
}

// MarshalJSON writes the wire format.
func (d Dump) MarshalJSON() ([]byte, error) {
	b := bytes.NewBufferString(`{"fields":[`)
	for i, f := range Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(f.Name))
	}
	fmt.Fprintf(b, `],"fine_step":%d,"coarse_step":%d,"nodes":{`, FineStep, CoarseStep)
	ids := make([]string, 0, len(d.Nodes))
	for id := range d.Nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		nd := d.Nodes[id]
		b.WriteString(strconv.Quote(id))
		b.WriteString(`:{"fine":`)
		writePoints(b, nd.Fine)
		b.WriteString(`,"coarse":`)
		writePoints(b, nd.Coarse)
		b.WriteByte('}')
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}

func writePoints(b *bytes.Buffer, ps []Point) {
	b.WriteByte('[')
	buf := make([]byte, 0, 32)
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		b.Write(strconv.AppendInt(buf[:0], p.T, 10))
		for _, v := range p.V {
			b.WriteByte(',')
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				b.WriteString("null")
				continue
			}
			b.Write(strconv.AppendFloat(buf[:0], float64(v), 'g', -1, 32))
		}
		b.WriteByte(']')
	}
	b.WriteByte(']')
}

// UnmarshalJSON reads the wire format, mapping figures by name; figures it
// does not know are dropped, those the sender lacks are unknown.
func (d *Dump) UnmarshalJSON(data []byte) error {
	var w struct {
		Fields []string `json:"fields"`
		Nodes  map[string]struct {
			Fine, Coarse [][]*float64
		} `json:"nodes"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	index := make([]int, len(w.Fields))
	for i, name := range w.Fields {
		if j, ok := FieldIndex(name); ok {
			index[i] = j
		} else {
			index[i] = -1
		}
	}
	d.Nodes = make(map[string]NodeDump, len(w.Nodes))
	for id, nd := range w.Nodes {
		fine, err := readPoints(nd.Fine, index)
		if err != nil {
			return fmt.Errorf("history: node %s: %w", id, err)
		}
		coarse, err := readPoints(nd.Coarse, index)
		if err != nil {
			return fmt.Errorf("history: node %s: %w", id, err)
		}
		d.Nodes[id] = NodeDump{Fine: fine, Coarse: coarse}
	}
	return nil
}

func readPoints(rows [][]*float64, index []int) ([]Point, error) {
	ps := make([]Point, 0, len(rows))
	for _, row := range rows {
		if len(row) == 0 || row[0] == nil {
			return nil, fmt.Errorf("a point without a time")
		}
		p := Unknown(int64(*row[0]))
		for i, v := range row[1:] {
			if i < len(index) && index[i] >= 0 && v != nil {
				p.V[index[i]] = float32(*v)
			}
		}
		ps = append(ps, p)
	}
	return ps, nil
}
