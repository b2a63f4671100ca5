//! ACLs: key patterns hold for RLOCK commands; the 7.0 recipe in docs/operations.md works.

mod common;
use common::Server;

#[test]
fn key_patterns_are_enforced_with_the_readme_recipe() {
    let server = Server::start();
    let mut admin = server.conn();
    // The recipe for Redis 7.0 in docs/operations.md, where module commands are in no ACL category.
    let recipe = "ACL SETUSER orders-service on >secret resetkeys ~orders:* -@all \
                  +rlock.acquire +rlock.release +rlock.renew +rlock.info";
    assert_eq!(admin.q(recipe).text(), "OK");
    let mut c = server.conn();
    assert_eq!(c.q("AUTH orders-service secret").text(), "OK");
    assert!(c.q("RLOCK.ACQUIRE orders:1 w").int() > 0);
    assert_eq!(c.q("RLOCK.INFO orders:1").field("owner").text(), "w");
    assert!(c
        .q("RLOCK.ACQUIRE payments:1 w")
        .err()
        .starts_with("NOPERM"));
    assert!(
        c.q("RLOCK.FORCERELEASE orders:1")
            .err()
            .starts_with("NOPERM"),
        "not granted"
    );
    assert!(c.q("DEL orders:1").err().starts_with("NOPERM"));
    assert_eq!(c.q("RLOCK.RELEASE orders:1 w").int(), 0);
    assert_eq!(
        admin.q("EXISTS payments:1").int(),
        0,
        "the refused call wrote nothing"
    );
}

#[test]
fn loading_warns_when_locks_could_be_evicted() {
    let server = Server::builder()
        .arg("maxmemory-policy", "volatile-lru")
        .start();
    assert!(
        server.log().contains("maxmemory-policy is"),
        "{}",
        server.log()
    );
    let quiet = Server::start();
    assert!(!quiet.log().contains("maxmemory-policy is"));
}

/// `redis_version` as (major, minor); Valkey reports the Redis version it is compatible with.
fn version(c: &mut common::Conn) -> (u32, u32) {
    let info = c.q("INFO server").text();
    let v = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .expect("version")
        .trim()
        .to_string();
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[test]
fn write_commands_are_in_the_write_category_where_the_server_supports_it() {
    let server = Server::start();
    let mut admin = server.conn();
    if version(&mut admin) < (7, 2) {
        eprintln!(
            "Redis 7.0 has no ACL categories for module commands: the recipe in docs/operations.md applies"
        );
        return;
    }
    assert_eq!(
        admin
            .q("ACL SETUSER reader on >secret ~* +@all -@write")
            .text(),
        "OK"
    );
    let mut c = server.conn();
    c.q("AUTH reader secret");
    assert!(c.q("RLOCK.ACQUIRE k w").err().starts_with("NOPERM"));
    assert!(c.q("RLOCK.INFO k").is_nil());
}
