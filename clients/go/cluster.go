package rlock

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

const slotCount = 16384

// crc16 is Redis Cluster's CRC16 (XMODEM: polynomial 0x1021, initial value 0).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// keySlot is the hash slot of a key: of its hash tag (the part between the first { and the
// next }, when not empty) if it has one.
func keySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key) % slotCount)
}

// routeKey is the key a command is routed by: the first key of ACQUIREALL / RELEASEALL (after
// numkeys), else the first argument ("" for a command without one).
func routeKey(cmd []string) string {
	switch strings.ToUpper(cmd[0]) {
	case "RLOCK.ACQUIREALL", "RLOCK.RELEASEALL":
		if len(cmd) > 2 {
			return cmd[2]
		}
	}
	if len(cmd) > 1 {
		return cmd[1]
	}
	return ""
}

// slotMap is which primary serves each slot, as CLUSTER SLOTS last said, patched by MOVED.
type slotMap struct {
	mu      sync.Mutex
	owner   []string // "host:port" by slot; nil until loaded
	at      time.Time
	refresh sync.Mutex // one refresh at a time
}

func (m *slotMap) get(slot int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.owner == nil {
		return ""
	}
	return m.owner[slot]
}

// addrs are the primaries the map knows, then the seeds: where to ask for a new map.
func (m *slotMap) addrs(seeds []string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, a := range append(append([]string(nil), m.owner...), seeds...) {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// moved patches one slot at once (MOVED names its new primary).
func (m *slotMap) moved(slot int, addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.owner != nil {
		m.owner[slot] = addr
	}
}

// refreshSlots asks the nodes it knows (then the seeds) for CLUSTER SLOTS, at most every
// 100 ms: callers that come while a refresh runs share its result.
func (c *Client) refreshSlots(ctx context.Context) error {
	m := &c.slots
	m.refresh.Lock()
	defer m.refresh.Unlock()
	m.mu.Lock()
	fresh := m.owner != nil && time.Since(m.at) < 100*time.Millisecond
	m.mu.Unlock()
	if fresh {
		return nil
	}
	var errs []string
	for _, addr := range m.addrs(c.opts.ClusterAddrs) {
		owner, err := c.askSlots(ctx, addr)
		if err == nil {
			m.mu.Lock()
			m.owner, m.at = owner, time.Now()
			m.mu.Unlock()
			return nil
		}
		errs = append(errs, err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("%w: no cluster node answered CLUSTER SLOTS: %s", ErrConnection, strings.Join(errs, "; "))
}

func (c *Client) askSlots(ctx context.Context, addr string) ([]string, error) {
	o := c.dialOptions(addr)
	o.db, o.protocol = 0, 2
	cn, err := dial(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	defer cn.close(errClientClosed)
	reply, err := cn.do(ctx, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	owner := make([]string, slotCount)
	covered := 0
	for _, r := range reply.elems {
		if len(r.elems) < 3 || len(r.elems[2].elems) < 2 {
			continue
		}
		h := r.elems[2].elems[0].str
		if h == "" || h == "?" {
			h = host // the node does not know its own address: the one asked
		}
		a := net.JoinHostPort(h, strconv.FormatInt(r.elems[2].elems[1].num, 10))
		for s := r.elems[0].num; s <= r.elems[1].num && s < slotCount; s++ {
			owner[s] = a
			covered++
		}
	}
	if covered == 0 {
		return nil, fmt.Errorf("%s serves no slots: is it a cluster node?", addr)
	}
	return owner, nil
}

// redirect reads a MOVED or ASK error reply from the node at asked: the slot and the address
// to go to.
func redirect(err error, asked string) (kind string, slot int, addr string) {
	se, ok := err.(*serverError)
	if !ok {
		return "", 0, ""
	}
	f := strings.Fields(se.msg)
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return "", 0, ""
	}
	slot, _ = strconv.Atoi(f[1])
	addr = f[2]
	if strings.HasPrefix(addr, ":") { // an unknown endpoint: the host of the node asked
		host, _, _ := net.SplitHostPort(asked)
		addr = host + addr
	}
	return f[0], slot, addr
}

// transient are the error replies of a topology change in progress: the command did nothing
// and is sent again, to the primary of now (READONLY: the server turned replica).
func transient(err error) (bool, string) {
	se, ok := err.(*serverError)
	if !ok {
		return false, ""
	}
	switch code := se.code(); code {
	case "READONLY", "TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN", "UNBLOCKED":
		return true, code
	}
	return false, ""
}
