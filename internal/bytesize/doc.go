// Package bytesize reads and writes byte counts as people type them in
// settings: "64MiB", "100M", "1.5G", "4096", "0".
//
// Units are powers of 1024, as in the rest of mure (mure bench --sizes):
// K, KB and KiB all mean 1024 bytes; M, MB and MiB 1024²; G, GB and GiB
// 1024³; T, TB and TiB 1024⁴. A bare number, or one followed by B, is a
// number of bytes. Case and spaces between the number and the unit do not
// matter. The package is pure: no I/O, no state.
package bytesize
