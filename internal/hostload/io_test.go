package hostload

import (
	"path/filepath"
	"testing"
)

func TestReadIO(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  IO
	}{
		{name: "nothing readable"},
		{
			name: "disk and two interfaces, loopback left out",
			files: map[string]string{
				"proc/self/io": "rchar: 900\nwchar: 800\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n",
				"proc/self/net/dev": "Inter-|   Receive                                                |  Transmit\n" +
					" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
					"    lo: 1000000 10 0 0 0 0 0 0 1000000 10 0 0 0 0 0 0\n" +
					"  eth0: 1500 3 0 0 0 0 0 0 2500 4 0 0 0 0 0 0\n" +
					"veth-s1: 500 1 0 0 0 0 0 0 700 2 0 0 0 0 0 0\n",
			},
			want: IO{DiskRead: 4096, DiskWrite: 8192, NetRx: 2000, NetTx: 3200},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, tc.files)
			r := open(filepath.Join(dir, "proc"), filepath.Join(dir, "cg"))
			if got := r.ReadIO(); got != tc.want {
				t.Errorf("ReadIO = %+v, want %+v", got, tc.want)
			}
		})
	}
}
