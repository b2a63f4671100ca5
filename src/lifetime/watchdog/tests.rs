//! The watchdog's bookkeeping, with the clock injected.

use super::*;

fn lock(key: &str) -> LockId {
    (0, Rc::from(key.as_bytes()))
}

fn bind(owner: &str, token: i64, client: u64, lease_ms: i64) -> Bind {
    Bind {
        owner: Rc::from(owner.as_bytes()),
        token: Some(token),
        client,
        lease_ms,
        kind: LockType::Plain,
        renewing: true,
    }
}

#[test]
fn renewals_fall_due_about_every_third_of_the_lease() {
    for key in ["a", "b", "order:42", "x"] {
        let due = next_due(1_000, 30_000, key.as_bytes());
        assert!(
            (1_000 + 7_500..=1_000 + 10_000).contains(&due),
            "{key}: {due}"
        );
    }
    assert_eq!(next_due(0, 1, b"k"), 1, "never due at once");
}

#[test]
fn due_bindings_are_taken_in_order_and_rescheduled() {
    let mut w = Watchdog::default();
    w.bind(lock("a"), bind("o", 1, 7, 300), 0);
    w.bind(lock("b"), bind("o", 2, 7, 3_000), 0);
    assert_eq!(w.next_due_at().map(|d| d <= 100), Some(true));
    assert!(w.due(50, 10).is_empty());
    let due = w.due(100, 10);
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].0, lock("a"));
    // Rescheduled: due again a third of a lease later, not before.
    assert!(w.due(150, 10).is_empty());
    assert_eq!(w.due(200, 10).len(), 1);
    assert_eq!(w.due(1_000, 10).len(), 2, "a again, and b");
}

#[test]
fn the_limit_spreads_a_burst_over_ticks() {
    let mut w = Watchdog::default();
    for i in 0..10 {
        w.bind(lock(&format!("k{i}")), bind("o", i, 1, 300), 0);
    }
    assert_eq!(w.due(1_000, 4).len(), 4);
    assert_eq!(w.due(1_000, 4).len(), 4);
    assert_eq!(w.due(1_000, 4).len(), 2);
}

#[test]
fn rebinding_moves_the_holding_to_the_new_client_only() {
    let mut w = Watchdog::default();
    w.bind(lock("a"), bind("o", 1, 7, 300), 0);
    w.bind(lock("a"), bind("o", 1, 8, 300), 10);
    assert!(w.take_client(7).is_empty());
    assert_eq!(w.due(1_000, 10).len(), 1, "one schedule entry is live");
    let taken = w.take_client(8);
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].1.client, 8);
    assert_eq!(w.len(), 0);
    assert_eq!(w.next_due_at(), None);
}

#[test]
fn a_closed_connection_takes_all_of_its_bindings() {
    let mut w = Watchdog::default();
    w.bind(lock("a"), bind("o", 1, 7, 300), 0);
    w.bind(lock("b"), bind("p", 2, 7, 300), 0);
    w.bind(lock("c"), bind("q", 3, 9, 300), 0);
    let mut taken: Vec<_> = w.take_client(7).into_iter().map(|(l, _)| l).collect();
    taken.sort();
    assert_eq!(taken, vec![lock("a"), lock("b")]);
    assert_eq!(w.len(), 1);
    assert!(w.get(0, b"c", b"q").is_some());
}

#[test]
fn readers_of_one_lock_are_bound_apart() {
    let mut w = Watchdog::default();
    w.bind(lock("rw"), bind("r1", 1, 7, 300), 0);
    w.bind(lock("rw"), bind("r2", 2, 8, 300), 0);
    assert_eq!(w.len(), 2);
    assert_eq!(w.take_client(7).len(), 1);
    assert_eq!(w.get(0, b"rw", b"r2").map(|b| b.client), Some(8));
    w.bind(lock("rw"), bind("r3", 3, 8, 300), 0);
    assert_eq!(w.unbind_lock(0, b"rw"), 2);
    assert_eq!(w.len(), 0);
    assert!(!w.has_client(8));
}

#[test]
fn a_grant_told_by_message_renews_only_once_confirmed() {
    let mut w = Watchdog::default();
    let unconfirmed = Bind {
        renewing: false,
        ..bind("o", 1, 7, 300)
    };
    w.bind(lock("a"), unconfirmed, 0);
    assert_eq!(w.next_due_at(), None);
    assert!(
        !w.confirm(lock("a"), b"o", Some(2), 300, 0),
        "another holding's token"
    );
    assert!(w.confirm(lock("a"), b"o", Some(1), 600, 100));
    assert!(
        !w.confirm(lock("a"), b"o", Some(1), 600, 100),
        "confirmed once"
    );
    let due = w.due(1_000, 10);
    assert_eq!(due.len(), 1);
    assert_eq!((due[0].1.client, due[0].1.lease_ms), (7, 600));
    assert_eq!(w.take_client(7).len(), 1, "its connection's close ends it");
}

#[test]
fn set_lease_and_retoken_change_what_renewals_do() {
    let mut w = Watchdog::default();
    w.bind(lock("a"), bind("o", 1, 7, 300), 0);
    w.set_lease(0, b"a", b"o", 9_000);
    w.retoken(0, b"a", b"o", Some(5));
    let due = w.due(1_000, 10);
    assert_eq!(due[0].1.lease_ms, 9_000);
    assert_eq!(due[0].1.token, Some(5));
    assert!(
        w.due(3_000, 10).is_empty(),
        "next renewal a third of 9 s later"
    );
}

#[test]
fn a_connection_keeps_its_list_until_it_closes() {
    let mut w = Watchdog::default();
    w.bind(lock("a"), bind("o", 1, 7, 300), 0);
    assert!(w.unbind(0, b"a", b"o").is_some());
    assert!(!w.has_client(7), "nothing bound to it");
    assert_eq!(
        w.by_client.len(),
        1,
        "its empty list stays for the next binding"
    );
    assert!(w.take_client(7).is_empty());
    assert!(w.by_client.is_empty(), "and goes when it closes");
}

#[test]
fn an_ended_bindings_schedule_entry_is_skipped_by_its_generation() {
    let mut w = Watchdog::default();
    w.bind(lock("a"), bind("o", 1, 7, 300), 0);
    let first_due = w.next_due_at();
    assert_eq!(w.unbind_lock(0, b"a"), 1);
    assert_eq!(w.next_due_at(), None, "its entry was stale");
    // The same holding bound again, later: only the new entry counts.
    w.bind(lock("a"), bind("o", 1, 7, 300), 0);
    w.unbind(0, b"a", b"o");
    w.bind(lock("a"), bind("o", 2, 7, 300), 1_000);
    assert!(w.next_due_at() > first_due);
    assert!(
        w.due(500, 10).is_empty(),
        "the ended ones' entries are not due"
    );
    assert_eq!(w.due(2_000, 10).len(), 1);
    assert_eq!(w.bindings[&0][&b"a"[..]].len(), 1);
    assert_eq!((w.live.len(), w.len()), (1, 1));
    assert!(w.unbind(0, b"a", b"o").is_some());
    assert!(w.bindings[&0].is_empty(), "the lock left its db's map");
    assert!(w.live.is_empty());
    assert!(w.spare.capacity() > 0, "its list is kept for the next lock");
    w.bind(lock("b"), bind("o", 3, 7, 300), 1_000);
    assert_eq!(w.spare.capacity(), 0, "and serves it");
}
