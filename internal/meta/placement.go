package meta

import (
	"hash/fnv"
	"slices"
)

// rendezvous orders nodes by highest-random-weight hashing of (path, node):
// each path gets a stable preference list, and adding or removing a node
// moves only the paths that ranked it first.
func rendezvous(path string, nodes []string) []string {
	type scored struct {
		id    string
		score uint64
	}
	sc := make([]scored, len(nodes))
	for i, id := range nodes {
		h := fnv.New64a()
		h.Write([]byte(path))
		h.Write([]byte{0})
		h.Write([]byte(id))
		sc[i] = scored{id, mix(h.Sum64())}
	}
	slices.SortFunc(sc, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		if a.id < b.id {
			return -1
		}
		return 1
	})
	out := make([]string, len(sc))
	for i, s := range sc {
		out[i] = s.id
	}
	return out
}

// mix is a 64-bit finaliser (splitmix64) to spread fnv's output.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
