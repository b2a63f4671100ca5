package rlock

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// handOver locks key with one Mutex of c, has another wait for it by NOTIFY, unlocks, and
// fails the test unless the waiter is granted.
func handOver(t *testing.T, c *Client, key string) {
	t.Helper()
	holder, waiter := c.NewMutex(key), c.NewMutex(key)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- waiter.LockContext(ctxFor(t, 10*time.Second)) }()
	eventually(t, "the waiter", func() bool { return waiters(t, c, key) == 1 })
	holder.Unlock()
	if err := <-got; err != nil || waiter.Token() <= holder.Token() {
		t.Fatalf("waiter: %v, token %d after %d", err, waiter.Token(), holder.Token())
	}
	waiter.Unlock()
}

func TestTLS(t *testing.T) {
	// A server built without TLS says so and exits (as one with TLS does without a certificate).
	probe, _ := exec.Command(serverBinary(), "--port", "0", "--tls-port", strconv.Itoa(freePort(t)),
		"--tls-cert-file", "/nonexistent", "--tls-key-file", "/nonexistent").CombinedOutput()
	if strings.Contains(string(probe), "Failed finding TLS support") {
		t.Skipf("%s is built without TLS", serverBinary())
	}
	dir := t.TempDir()
	crt, key := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	out, err := exec.Command("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
		"-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
		"-keyout", key, "-out", crt).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl: %v\n%s", err, out)
	}
	port := freePort(t)
	s := startServer(t, "--tls-port", strconv.Itoa(port), "--tls-cert-file", crt, "--tls-key-file", key,
		"--tls-ca-cert-file", crt, "--tls-auth-clients", "no")
	pem, _ := os.ReadFile(crt)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := newTestClient(testOptions{Addr: "127.0.0.1:" + strconv.Itoa(port), TLSConfig: &tls.Config{RootCAs: pool}})
	defer c.Close()
	handOver(t, c, "over-tls")
	for _, line := range strings.Split(admin(t, s.client(t), "CLIENT", "LIST").(string), "\n") {
		if strings.Contains(line, "laddr=127.0.0.1:"+strconv.Itoa(port)) && strings.Contains(line, " sub=1 ") {
			return // the waits were told on the TLS connection
		}
	}
	t.Fatal("no subscribed connection on the TLS port")
}

func TestACLUser(t *testing.T) {
	s := startServer(t)
	root := s.client(t)
	admin(t, root, "ACL", "SETUSER", "locker", "on", ">s3cret", "~*", "&__rlock__:*", "+@all")
	admin(t, root, "ACL", "SETUSER", "nochannel", "on", ">s3cret", "~*", "resetchannels", "+@all")
	for _, protocol := range []int{3, 2} {
		c := s.client(t, func(o *testOptions) { o.Username, o.Password, o.Protocol = "locker", "s3cret", protocol })
		handOver(t, c, "acl"+strconv.Itoa(protocol))
		if who := admin(t, c, "ACL", "WHOAMI"); who != "locker" {
			t.Fatalf("ACL WHOAMI: %v", who)
		}
	}
	wrong := s.client(t, func(o *testOptions) { o.Username, o.Password = "locker", "wrong" })
	if err := wrong.NewMutex("acl").TryLock(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("a wrong password: %v", err)
	}
	barred := s.client(t, func(o *testOptions) { o.Username, o.Password = "nochannel", "s3cret" })
	if err := barred.NewMutex("acl").TryLock(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("a user without the &__rlock__:* channel: %v", err)
	}
}
