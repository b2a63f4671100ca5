//! Redis Cluster: three masters with the module, a cluster-aware client, slot migration.

mod common;
use common::cluster::{key_slot, Cluster};

#[test]
fn commands_follow_redirects_across_the_cluster_and_add_no_keys() {
    let cluster = Cluster::start();
    let mut client = cluster.client();
    let keys: Vec<String> = (0..200).map(|i| format!("order:{i}")).collect();
    for k in &keys {
        assert!(
            client
                .cmd(&["RLOCK.ACQUIRE", k, "worker-1", "PX", "60000"])
                .int()
                > 0,
            "{k}"
        );
        assert_eq!(
            client.cmd(&["RLOCK.INFO", k]).field("owner").text(),
            "worker-1"
        );
    }
    assert!(client.redirects > 0, "keys live on several nodes");
    let total: i64 = cluster
        .nodes
        .iter()
        .map(|n| n.conn().q("DBSIZE").int())
        .sum();
    assert_eq!(
        total, 200,
        "one key per lock, in the lock's own slot: nothing else"
    );
    for k in &keys {
        assert_eq!(client.cmd(&["RLOCK.RELEASE", k, "worker-1"]).int(), 0);
    }
    let total: i64 = cluster
        .nodes
        .iter()
        .map(|n| n.conn().q("DBSIZE").int())
        .sum();
    assert_eq!(total, 0, "nothing stays behind after release");
}

#[test]
fn key_positions_are_declared() {
    let cluster = Cluster::start();
    let mut c = cluster.nodes[0].conn();
    for cmd in [
        "RLOCK.ACQUIRE order:1 w PX 10 WAIT 5",
        "RLOCK.RELEASE order:1 w",
        "RLOCK.RENEW order:1 w",
        "RLOCK.INFO order:1",
        "RLOCK.FORCERELEASE order:1",
    ] {
        let keys = c.q(&format!("COMMAND GETKEYS {cmd}")).items();
        assert_eq!(keys.len(), 1, "{cmd}");
        assert_eq!(keys[0].text(), "order:1", "{cmd}");
    }
    let info = c.q("COMMAND INFO rlock.acquire").items()[0].items();
    assert_eq!(info[1].int(), -3, "arity");
    assert_eq!(
        (info[3].int(), info[4].int(), info[5].int()),
        (1, 1, 1),
        "first, last, step"
    );
    let docs = c.q("COMMAND DOCS rlock.acquire").items()[1].clone();
    assert!(docs.field("summary").text().contains("fencing token"));
    assert_eq!(docs.field("since").text(), "0.1.0");
}

#[test]
fn a_held_lock_survives_a_slot_migration() {
    let cluster = Cluster::start();
    let mut client = cluster.client();
    let key = "migrating:{lock}";
    let token = client
        .cmd(&["RLOCK.ACQUIRE", key, "worker-1", "PX", "60000"])
        .int();
    let source = client.port_of(key);
    let target = other_node(&cluster, source);
    migrate(&cluster, key, source, target);
    finish_migration(&cluster, key, target);
    let info = client.cmd(&["RLOCK.INFO", key]);
    assert_eq!(info.field("owner").text(), "worker-1");
    assert_eq!(info.field("token").int(), token);
    assert!(
        info.field("ttl").int() > 50000,
        "the lease moved with the lock"
    );
    assert_eq!(client.port_of(key), target);
    assert!(client.cmd(&["RLOCK.ACQUIRE", key, "worker-2"]).is_nil());
    assert_eq!(client.cmd(&["RLOCK.RELEASE", key, "worker-1"]).int(), 0);
    assert!(client.cmd(&["RLOCK.ACQUIRE", key, "worker-2"]).int() > token);
}

/// `stat` of `CLUSTER INFO` (e.g. `cluster_stats_messages_publish_sent`), 0 when absent.
fn cluster_stat(c: &mut common::Conn, stat: &str) -> i64 {
    c.q("CLUSTER INFO")
        .text()
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{stat}:")))
        .map_or(0, |v| v.trim().parse().expect("number"))
}

#[test]
fn notify_channels_name_the_node_so_a_grant_reaches_only_its_waiter() {
    let cluster = Cluster::start();
    let (a, b) = (&cluster.nodes[0], &cluster.nodes[1]);
    let mut on_a = a.conn();
    let key = (0..)
        .map(|i| format!("n{i}"))
        .find(|k| on_a.cmd(&["RLOCK.INFO", k]) == common::Value::Nil)
        .expect("a key of node a");
    let mut waiter = a.conn();
    waiter.q("HELLO 3");
    let id = waiter.q("CLIENT ID").int();
    let channel = waiter.q("RLOCK.CHANNEL").text();
    assert_eq!(
        channel,
        format!("__rlock__:{}:{id}", cluster.node_id(a.port))
    );
    waiter.cmd(&["SUBSCRIBE", &channel]);
    // On node b: what a client there with the same id would hear under a plain
    // `__rlock__:<id>` name, and node b's own name for that id.
    let mut eavesdropper = b.conn();
    eavesdropper.cmd(&["SUBSCRIBE", &format!("__rlock__:{id}")]);
    let other = b.conn().q(&format!("RLOCK.CHANNEL {id}")).text();
    assert_ne!(other, channel);
    assert!(other.starts_with(&format!("__rlock__:{}:", cluster.node_id(b.port))));
    // Only the grants publish (not Redisson's unlock announcements).
    on_a.q("CONFIG SET rlock.redisson-publish no");
    let grants = 20;
    let sent_before = cluster_stat(&mut on_a, "cluster_stats_messages_publish_sent");
    for i in 0..grants {
        on_a.cmd(&["RLOCK.ACQUIRE", &key, "h", "PX", "60000"]);
        let owner = format!("w{i}");
        let reply = waiter.cmd(&["RLOCK.ACQUIRE", &key, &owner, "WAIT", "0", "NOTIFY"]);
        assert_eq!(reply, common::Value::Simple("WAITING".into()));
        on_a.cmd(&["RLOCK.RELEASE", &key, "h"]);
        let message = waiter.read().expect("grant").items()[2].text();
        assert!(message.starts_with("granted lock "), "{message}");
        assert!(message.ends_with(&format!(" {owner}")), "{message}");
        waiter.cmd(&["RLOCK.RELEASE", &key, &owner]);
    }
    let sent = cluster_stat(&mut on_a, "cluster_stats_messages_publish_sent") - sent_before;
    eprintln!(
        "cluster bus PUBLISH messages per grant (3 masters): {}",
        sent as f64 / grants as f64
    );
    // Each grant goes to the two other nodes (fewer only if a bus link dropped meanwhile).
    assert!(
        (grants..=2 * grants).contains(&sent),
        "bus PUBLISH messages: {sent}"
    );
    eavesdropper.set_read_timeout(Some(std::time::Duration::from_millis(200)));
    assert!(
        eavesdropper.read().is_err(),
        "nothing reaches node b's plain channel"
    );
}

/// A waiter queued on the node a lock migrates away from is sent where the lock now lives
/// (`ASK` while the slot migrates), never granted a copy of the lock on the old node.
#[test]
fn waiters_follow_a_migrating_slot() {
    let cluster = Cluster::start();
    let mut client = cluster.client();
    let key = "queued:{moving}";
    assert!(
        client
            .cmd(&["RLOCK.ACQUIRE", key, "worker-1", "PX", "60000"])
            .int()
            > 0
    );
    let slot = key_slot(key).to_string();
    let source = client.port_of(key);
    let target = other_node(&cluster, source);
    let waiter = common::Pending::send(
        cluster.node(source),
        &format!("RLOCK.ACQUIRE {key} worker-2 PX 60000 WAIT 10000"),
    );
    cluster.node(source).wait_blocked(1);
    migrate(&cluster, key, source, target);
    let mut src = cluster.node(source).conn();
    let reply = waiter.reply();
    assert_eq!(reply.err(), format!("ASK {slot} 127.0.0.1:{target}"));
    assert_eq!(
        src.cmd(&["CLUSTER", "COUNTKEYSINSLOT", &slot]).int(),
        0,
        "no copy of the lock on the old node"
    );
    finish_migration(&cluster, key, target);
    let info = client.cmd(&["RLOCK.INFO", key]);
    assert_eq!(
        info.field("owner").text(),
        "worker-1",
        "the lock lives on, on the target"
    );
}

fn other_node(cluster: &Cluster, port: u16) -> u16 {
    cluster
        .nodes
        .iter()
        .map(|n| n.port)
        .find(|p| *p != port)
        .expect("another node")
}

/// Moves `key` from `source` to `target` with MIGRATE, its slot marked migrating/importing.
fn migrate(cluster: &Cluster, key: &str, source: u16, target: u16) {
    let slot = key_slot(key).to_string();
    let (source_id, target_id) = (cluster.node_id(source), cluster.node_id(target));
    let mut src = cluster.node(source).conn();
    let mut dst = cluster.node(target).conn();
    let importing = dst.cmd(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &source_id]);
    assert_eq!(importing.text(), "OK");
    let migrating = src.cmd(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &target_id]);
    assert_eq!(migrating.text(), "OK");
    let migrated = src.cmd(&[
        "MIGRATE",
        "127.0.0.1",
        &target.to_string(),
        key,
        "0",
        "5000",
    ]);
    assert_eq!(migrated.text(), "OK");
}

/// Every node learns that `key`'s slot is served by `target` now.
fn finish_migration(cluster: &Cluster, key: &str, target: u16) {
    let (slot, target_id) = (key_slot(key).to_string(), cluster.node_id(target));
    for node in &cluster.nodes {
        node.conn()
            .cmd(&["CLUSTER", "SETSLOT", &slot, "NODE", &target_id]);
    }
}

#[test]
fn several_keys_must_share_a_slot() {
    let cluster = Cluster::start();
    let mut client = cluster.client();
    let (a, b) = ("{acct}:1", "{acct}:2");
    let got = client.cmd(&["RLOCK.ACQUIREALL", "2", a, b, "w", "PX", "60000"]);
    assert_eq!(got.items().len(), 2, "{got:?}");
    assert_eq!(client.cmd(&["RLOCK.INFO", b]).field("owner").text(), "w");
    let released = client.cmd(&["RLOCK.RELEASEALL", "2", a, b, "w"]).items();
    assert_eq!((released[0].int(), released[1].int()), (0, 0));
    // Keys of different slots: refused by Redis before the module runs, nothing taken.
    let (x, y) = ("order:1", "order:2");
    assert_ne!(key_slot(x), key_slot(y));
    let mut node = cluster.node(client.port_of(x)).conn();
    let refused = node.cmd(&["RLOCK.ACQUIREALL", "2", x, y, "w"]);
    assert!(refused.err().starts_with("CROSSSLOT"), "{refused:?}");
    assert!(node.cmd(&["RLOCK.INFO", x]).is_nil());
}

#[test]
fn keys_whose_side_keys_would_leave_their_slot_are_refused() {
    let cluster = Cluster::start();
    let mut client = cluster.client();
    for key in ["a{}b", "a}b", "a{b"] {
        let before: i64 = cluster
            .nodes
            .iter()
            .map(|n| n.conn().q("DBSIZE").int())
            .sum();
        for line in [
            vec!["RWLOCK.ACQUIRE", key, "o", "WRITE", "PX", "60000"],
            vec!["RWLOCK.INFO", key],
            vec!["RSEM.SETPERMITS", key, "2"],
            vec!["RSEM.ACQUIRE", key, "o"],
        ] {
            let reply = client.cmd(&line);
            assert!(reply.err().contains("another slot"), "{line:?}: {reply:?}");
        }
        let after: i64 = cluster
            .nodes
            .iter()
            .map(|n| n.conn().q("DBSIZE").int())
            .sum();
        assert_eq!(after, before, "{key}: a refused call writes nothing");
    }
    assert!(
        client
            .cmd(&["RLOCK.ACQUIRE", "a{}b", "o", "PX", "60000"])
            .int()
            > 0,
        "a plain lock has no side keys"
    );
    assert_eq!(client.cmd(&["RSEM.SETPERMITS", "{a}b", "2"]).int(), 1);
    assert!(client.cmd(&["RSEM.ACQUIRE", "{a}b", "o"]).int() > 0);
    assert!(
        client
            .cmd(&["RWLOCK.ACQUIRE", "plain", "o", "READ", "PX", "60000"])
            .int()
            > 0
    );
}
