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
    let slot = key_slot(key).to_string();
    let source = client.port_of(key);
    let target = cluster
        .nodes
        .iter()
        .map(|n| n.port)
        .find(|p| *p != source)
        .expect("another node");
    let (source_id, target_id) = (cluster.node_id(source), cluster.node_id(target));
    let mut src = cluster.node(source).conn();
    let mut dst = cluster.node(target).conn();
    assert_eq!(
        dst.cmd(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &source_id])
            .text(),
        "OK"
    );
    assert_eq!(
        src.cmd(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &target_id])
            .text(),
        "OK"
    );
    let migrated = src.cmd(&[
        "MIGRATE",
        "127.0.0.1",
        &target.to_string(),
        key,
        "0",
        "5000",
    ]);
    assert_eq!(migrated.text(), "OK");
    for node in &cluster.nodes {
        node.conn()
            .cmd(&["CLUSTER", "SETSLOT", &slot, "NODE", &target_id]);
    }
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
