package main

// The test's own network: one network namespace per host, each with a veth link into a
// bridge that lives in a namespace of its own (the "switch"), so nothing is added to the
// machine's own namespace and the addresses exist only inside ours. A partition is made
// the way a dead link behaves: every packet between two hosts is dropped silently (no reset,
// no "unreachable"), by pointing each side's neighbour entry for the other at a MAC address
// nobody has. This kernel has neither netem nor tc drop actions nor iptables; iproute2's
// permanent neighbour entries are enough and are undone by deleting them.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"sync"
)

// deadMAC is a locally administered address that no interface in our network has: frames
// sent to it are flooded by the bridge and dropped by every host.
const deadMAC = "02:00:5e:00:de:ad"

// Network is the set of namespaces one run made; Close removes them all.
type Network struct {
	prefix string
	hosts  map[string]string // host name -> IP address
	mu     sync.Mutex
	cut    map[[2]string]bool // pairs currently partitioned (sorted names)
}

// NewNetwork makes the switch namespace; hosts are added with AddHost. The prefix is unique
// per run so that runs of other people on this machine never meet ours.
func NewNetwork() (*Network, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	n := &Network{prefix: "rlj" + hex.EncodeToString(b[:]), hosts: map[string]string{}, cut: map[[2]string]bool{}}
	if err := run("ip", "netns", "add", n.ns("sw")); err != nil {
		return nil, err
	}
	if err := n.steps(
		[]string{"ip", "-n", n.ns("sw"), "link", "add", "br0", "type", "bridge"},
		[]string{"ip", "-n", n.ns("sw"), "link", "set", "br0", "up"},
	); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Network) ns(host string) string { return n.prefix + "-" + host }

// AddHost makes a namespace for host with address ip/24 on eth0, linked to the switch.
func (n *Network) AddHost(host, ip string) error {
	// The veth is made in the switch namespace directly (names are per namespace), then one
	// end moves into the host's namespace.
	if err := run("ip", "netns", "add", n.ns(host)); err != nil {
		return err
	}
	n.mu.Lock()
	n.hosts[host] = ip
	n.mu.Unlock()
	sw, h := n.ns("sw"), n.ns(host)
	return n.steps(
		[]string{"ip", "-n", sw, "link", "add", "p-" + host, "type", "veth", "peer", "name", "eth0", "netns", h},
		[]string{"ip", "-n", sw, "link", "set", "p-" + host, "master", "br0", "up"},
		[]string{"ip", "-n", h, "addr", "add", ip + "/24", "dev", "eth0"},
		[]string{"ip", "-n", h, "link", "set", "eth0", "up"},
		[]string{"ip", "-n", h, "link", "set", "lo", "up"},
	)
}

// IP is host's address.
func (n *Network) IP(host string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[host]
}

// Command runs argv inside host's namespace.
func (n *Network) Command(host string, argv ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.ns(host)}, argv...)...)
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// Cut drops every packet between each host of side a and each host of side b, both ways.
func (n *Network) Cut(a, b []string) error {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				continue
			}
			n.mu.Lock()
			ipx, ipy, done := n.hosts[x], n.hosts[y], n.cut[pair(x, y)]
			n.cut[pair(x, y)] = true
			n.mu.Unlock()
			if done {
				continue
			}
			if err := n.steps(
				[]string{"ip", "-n", n.ns(x), "neigh", "replace", ipy, "lladdr", deadMAC, "dev", "eth0", "nud", "permanent"},
				[]string{"ip", "-n", n.ns(y), "neigh", "replace", ipx, "lladdr", deadMAC, "dev", "eth0", "nud", "permanent"},
			); err != nil {
				return err
			}
		}
	}
	return nil
}

// Heal undoes every cut: the neighbour entries go, and ARP finds the real addresses again.
func (n *Network) Heal() error {
	n.mu.Lock()
	pairs := make([][2]string, 0, len(n.cut))
	for p := range n.cut {
		pairs = append(pairs, p)
	}
	n.cut = map[[2]string]bool{}
	hosts := n.hosts
	n.mu.Unlock()
	var first error
	for _, p := range pairs {
		for _, side := range [][2]string{{p[0], p[1]}, {p[1], p[0]}} {
			if err := run("ip", "-n", n.ns(side[0]), "neigh", "del", hosts[side[1]], "dev", "eth0"); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// Others is every host but the ones given, sorted.
func (n *Network) Others(except ...string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	skip := map[string]bool{}
	for _, e := range except {
		skip[e] = true
	}
	var out []string
	for h := range n.hosts {
		if !skip[h] {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}

// Close deletes every namespace of the run (their veths go with them). Processes still inside
// a namespace keep it alive until they exit, which is why the run kills its processes first.
func (n *Network) Close() {
	n.mu.Lock()
	hosts := make([]string, 0, len(n.hosts)+1)
	for h := range n.hosts {
		hosts = append(hosts, h)
	}
	n.mu.Unlock()
	hosts = append(hosts, "sw")
	for _, h := range hosts {
		_ = run("ip", "netns", "del", n.ns(h))
	}
}

func (n *Network) steps(cmds ...[]string) error {
	for _, c := range cmds {
		if err := run(c[0], c[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
