package main

// The models on small histories written by hand: each one is shown to reject the violation it
// is there to catch and to accept the legal history next to it, so a green run means
// something. No servers needed.

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

const ms = int64(time.Millisecond)

func grantOp(p, session int, call, ret, token int64) Op {
	return Op{Process: p, Session: session, F: "acquire", Call: call, Return: ret, Outcome: "ok", Token: token, LeaseMs: 2000}
}

func releaseOp(p, session int, call, ret int64, outcome string) Op {
	return Op{Process: p, Session: session, F: "release", Call: call, Return: ret, Outcome: outcome}
}

func writeOp(p, session int, call, ret, token int64, outcome string) Op {
	return Op{Process: p, Session: session, F: "write", Target: "fenced", Call: call, Return: ret, Token: token, Outcome: outcome}
}

func readOp(p, session int, call, ret, value int64) Op {
	return Op{Process: p, Session: session, F: "read", Target: "fenced", Call: call, Return: ret, Value: value, Outcome: "ok"}
}

func verdict(m porcupine.Model, ops []Op) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(m, toPorcupine(ops), 10*time.Second)
}

func TestLeaseLockRejectsTwoHoldersWithinALease(t *testing.T) {
	m := LeaseLockModel(Reports{}).ToModel()
	overlapping := []Op{
		grantOp(0, 1, 0, 1*ms, 10),
		grantOp(1, 1, 100*ms, 101*ms, 20), // p0's lease (2 s) has not ended
		releaseOp(1, 1, 200*ms, 201*ms, "ok"),
		releaseOp(0, 1, 300*ms, 301*ms, "ok"),
	}
	if got := verdict(m, overlapping); got != porcupine.Illegal {
		t.Fatalf("two holders within one lease: %s, want Illegal", got)
	}
	afterRelease := []Op{
		grantOp(0, 1, 0, 1*ms, 10),
		releaseOp(0, 1, 50*ms, 51*ms, "ok"),
		grantOp(1, 1, 100*ms, 101*ms, 20),
		releaseOp(1, 1, 200*ms, 201*ms, "ok"),
	}
	if got := verdict(m, afterRelease); got != porcupine.Ok {
		t.Fatalf("a grant after the release: %s, want Ok", got)
	}
	afterLease := []Op{
		grantOp(0, 1, 0, 1*ms, 10),
		grantOp(1, 1, 2100*ms, 2101*ms, 20), // p0 paused past its lease
		releaseOp(0, 1, 2200*ms, 2201*ms, "fail"),
	}
	if got := verdict(m, afterLease); got != porcupine.Ok {
		t.Fatalf("a grant after the lease ended: %s, want Ok", got)
	}
}

func TestLeaseLockTakesTheLeaseEndFromTheServersReport(t *testing.T) {
	// p1 is granted 100 ms after p0, long before p0's 2 s lease can have run out by the
	// client's bound: legal only if a server reported p0's holding gone in between.
	ops := []Op{
		grantOp(0, 1, 0, 1*ms, 10),
		grantOp(1, 1, 100*ms, 101*ms, 20),
		releaseOp(0, 1, 300*ms, 301*ms, "fail"),
	}
	cases := []struct {
		name    string
		reports Reports
		want    porcupine.CheckResult
	}{
		{"no report", Reports{}, porcupine.Illegal},
		{"the key expired on a server", Reports{Expired: []int64{50 * ms}}, porcupine.Ok},
		{"p0 was told it lost the lock", Reports{Lost: map[int][]int64{0: {50 * ms}}}, porcupine.Ok},
		{"another process lost it", Reports{Lost: map[int][]int64{2: {50 * ms}}}, porcupine.Illegal},
		{"an expiry before p0's grant", Reports{Expired: []int64{0}}, porcupine.Illegal},
		{"an expiry after p1's grant", Reports{Expired: []int64{150 * ms}}, porcupine.Illegal},
	}
	for _, c := range cases {
		if got := verdict(LeaseLockModel(c.reports).ToModel(), ops); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestLeaseLockUnknownOutcomeMasksNoOverlap(t *testing.T) {
	// p2's acquire of unknown outcome may take effect, but not so as to end p0's lease early.
	ops := []Op{
		grantOp(0, 1, 0, 1*ms, 10),
		{Process: 2, Session: 1, F: "acquire", Call: 10 * ms, Outcome: "info", LeaseMs: 2000},
		grantOp(1, 1, 100*ms, 101*ms, 20),
	}
	if got := verdict(LeaseLockModel(Reports{}).ToModel(), ops); got != porcupine.Illegal {
		t.Fatalf("%s, want Illegal", got)
	}
}

func TestTokenOrderRejectsAnOlderTokenGrantedLater(t *testing.T) {
	inverted := []Op{grantOp(0, 1, 0, 1*ms, 20), grantOp(1, 1, 10*ms, 11*ms, 10)}
	if got := verdict(TokenOrderModel, inverted); got != porcupine.Illegal {
		t.Fatalf("%s, want Illegal", got)
	}
	concurrent := []Op{grantOp(0, 1, 0, 20*ms, 20), grantOp(1, 1, 10*ms, 30*ms, 10)}
	if got := verdict(TokenOrderModel, concurrent); got != porcupine.Ok {
		t.Fatalf("overlapping grants may be ordered either way: %s, want Ok", got)
	}
}

func TestRegisterRejectsAnOlderTokenAcceptedAfterANewerOne(t *testing.T) {
	m := FencedRegisterModel.ToModel()
	stale := []Op{writeOp(1, 1, 0, 1*ms, 20, "ok"), writeOp(0, 1, 10*ms, 11*ms, 10, "ok")}
	if got := verdict(m, stale); got != porcupine.Illegal {
		t.Fatalf("older token accepted after a newer: %s, want Illegal", got)
	}
	refused := []Op{writeOp(1, 1, 0, 1*ms, 20, "ok"), writeOp(0, 1, 10*ms, 11*ms, 10, "fail"), readOp(0, 1, 20*ms, 21*ms, 20)}
	if got := verdict(m, refused); got != porcupine.Ok {
		t.Fatalf("older token refused: %s, want Ok", got)
	}
	staleRead := []Op{writeOp(1, 1, 0, 1*ms, 20, "ok"), readOp(0, 1, 10*ms, 11*ms, 0)}
	if got := verdict(m, staleRead); got != porcupine.Illegal {
		t.Fatalf("a read missing a completed write: %s, want Illegal", got)
	}
}

func TestMinimizeKeepsOnlyTheSessionsThatFail(t *testing.T) {
	m := LeaseLockModel(Reports{}).ToModel()
	var ops []Op
	for i := int64(0); i < 20; i++ { // twenty clean sessions, one after another
		ops = append(ops, grantOp(0, int(i), i*100*ms, i*100*ms+ms, 10+i), releaseOp(0, int(i), i*100*ms+50*ms, i*100*ms+51*ms, "ok"))
	}
	ops = append(ops, grantOp(1, 1, 1000*ms+10*ms, 1000*ms+11*ms, 99)) // inside p0's session 10
	minimal := minimize(m, ops, 10*time.Second)
	if len(minimal) != 3 {
		t.Fatalf("minimal sub-history has %d operations, want 3: %v", len(minimal), minimal)
	}
	if verdict(m, minimal) != porcupine.Illegal {
		t.Fatal("the minimal sub-history does not fail")
	}
	dir := t.TempDir()
	var log strings.Builder
	results := Check(ops, Reports{}, dir, 10*time.Second, &log)
	if results[0].Result != "Illegal" || results[0].Picture == "" || len(results[0].Minimal) != 3 {
		t.Fatalf("check: %+v\n%s", results[0], log.String())
	}
}
