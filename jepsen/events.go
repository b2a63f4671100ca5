package main

// The servers' own account of the lock: every data node publishes the lock key's keyspace
// events (rlock.acquired, rlock.released, expired: a lease that ran out on the server's clock,
// del), and the test records them with the same monotonic clock as the workers, one JSON line
// each, in server-events.jsonl. They are heard over each node's loopback, so a partition does
// not hide them; a node's events stop while it is killed or stopped.

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// ServerEvent is one keyspace event as a data node published it.
type ServerEvent struct {
	Host  string `json:"host"`
	Event string `json:"event"`
	Time  int64  `json:"time"`
}

// EventLog subscribes to the lock key's events on every data node. Sentinel ends every
// normal connection of a server it promotes or demotes (CLIENT KILL TYPE normal), the
// subscription included, so each node's subscription is made again whenever it ends, until
// Stop; events published in the moment between are missed (the model then falls back on the
// client-side lease bound).
type EventLog struct {
	mu      sync.Mutex
	f       *os.File
	current map[string]*exec.Cmd
	stopped bool
	done    sync.WaitGroup
	count   map[string]int
}

func StartEventLog(s *Servers, path, key string) (*EventLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	l := &EventLog{f: f, count: map[string]int{}, current: map[string]*exec.Cmd{}}
	for _, h := range s.Hosts {
		first, err := l.subscribe(s, h, key)
		if err != nil {
			return l, err
		}
		l.done.Add(1)
		go l.follow(s, h, key, first)
	}
	return l, nil
}

// subscribe starts redis-cli subscribed to the key's events on host; nil once stopped.
func (l *EventLog) subscribe(s *Servers, host, key string) (io.ReadCloser, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return nil, nil
	}
	cmd := s.net.Command(host, "redis-cli", "-p", redisPort, "--csv", "SUBSCRIBE", "__keyspace@0__:"+key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	l.current[host] = cmd
	return out, nil
}

// follow reads host's events, subscribing again each time the connection ends.
func (l *EventLog) follow(s *Servers, host, key string, out io.ReadCloser) {
	defer l.done.Done()
	for out != nil {
		l.read(host, out)
		l.mu.Lock()
		cmd := l.current[host]
		l.mu.Unlock()
		_ = cmd.Wait()
		time.Sleep(100 * time.Millisecond)
		var err error
		if out, err = l.subscribe(s, host, key); err != nil {
			return
		}
	}
}

func (l *EventLog) read(host string, out io.Reader) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		now := monotonicNow()
		// --csv: "message","__keyspace@0__:jepsen","rlock.acquired"
		fields := strings.Split(sc.Text(), ",")
		if len(fields) != 3 || fields[0] != `"message"` {
			continue
		}
		e := ServerEvent{Host: host, Event: strings.Trim(fields[2], `"`), Time: now}
		line, _ := json.Marshal(e)
		l.mu.Lock()
		_, _ = l.f.Write(append(line, '\n'))
		l.count[e.Event]++
		l.mu.Unlock()
	}
}

// Stop ends the subscriptions and returns how many of each event were heard.
func (l *EventLog) Stop() map[string]int {
	l.mu.Lock()
	l.stopped = true
	for _, c := range l.current {
		if c.Process != nil {
			_ = c.Process.Kill()
		}
	}
	l.mu.Unlock()
	l.done.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.f.Close()
	return l.count
}

// LoadReports reads a run's server-events.jsonl (missing in runs recorded before it existed:
// then only the lost-lock notices count) and the workers' lost-lock notices into the reports
// the lease-lock model takes a holding's end from.
func LoadReports(dir string, notes []Event) Reports {
	r := Reports{Lost: map[int][]int64{}}
	if f, err := os.Open(filepath.Join(dir, "server-events.jsonl")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e ServerEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil && (e.Event == "expired" || e.Event == "evicted") {
				r.Expired = append(r.Expired, e.Time)
			}
		}
		f.Close()
	}
	for _, n := range notes {
		if n.F == "lost" {
			r.Lost[n.Process] = append(r.Lost[n.Process], n.Time)
		}
	}
	sort.Slice(r.Expired, func(i, j int) bool { return r.Expired[i] < r.Expired[j] })
	for _, times := range r.Lost {
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	}
	return r
}
