// Package testbed turns one Linux machine into several emulated hosts so
// that scale-out and faults can be measured honestly on a 2-core box.
//
// A host is a network namespace with one veth link to a private bridge; the
// link is shaped both ways by a token bucket (tc tbf) and the host's
// processes run in a cgroup with a CPU quota and its own memory accounting.
// Server hosts run one mure node each, joined into one cluster, on a disk
// of their own: an ext4 image on the machine's disk, attached to a loop
// device with direct I/O and throttled on that device (disk.go); client
// hosts run load generators (mure bench) through Exec.
//
// Everything the testbed creates carries its prefix (default "mure-"):
// namespaces <prefix><host>, the bridge <prefix>br, the bridge-side veth
// ends <prefix><host>, with a hub (Config.Hub) the hub bridge <prefix>hub
// and its veth ends <prefix><host>h, cgroups <prefix><host> under the
// cgroup of the process that made them, disk images <prefix><host>.img (or,
// with DiskTmpfs, a tmpfs <prefix>data holding every node's data). The subnet (default 10.77.0.0/24) has no route, NAT or
// forwarding to any real interface: hosts have no default route, so they
// reach only each other and the bridge's own address (.1), from which the
// root namespace watches the nodes. Up refuses a subnet already in use.
//
// The state of a testbed (hosts, addresses, PIDs, cgroups) is kept in
// <dir>/state.json so that separate commands (up, exec, kill, down) find it.
// Down removes what the state names; Teardown also sweeps everything with
// the prefix, for leftovers of a crashed run, and so does Up before it
// makes anything: a prefix belongs to one testbed at a time. A disk's loop
// device detaches itself once its file system is unmounted (autoclear), and
// Down waits until it has.
//
// Needs root, iproute2 (ip, tc), util-linux (nsenter, mount), e2fsprogs
// (mkfs.ext4) and cgroups (v1 or v2); loss needs iptables.
package testbed
