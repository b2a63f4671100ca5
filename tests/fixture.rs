//! The test servers are never mistaken for another suite's: a port another process took between
//! the free-port pick and the bind gets a new one, or (a port given, a restart) a clear failure,
//! and a foreign server answering PING on the port is never taken for ours.

mod common;
use common::Server;
use std::net::TcpListener;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A port picker handing out `taken` once (as if another process took it after the pick),
/// then free ones.
fn taken_first(taken: u16) -> impl FnMut() -> u16 {
    let mut first = Some(taken);
    move || {
        first.take().unwrap_or_else(|| {
            TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("free port")
                .port()
        })
    }
}

fn answering_pid(server: &Server) -> String {
    server.info_field("server", "process_id").trim().to_string()
}

fn panic_text(run: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(run)).expect_err("should have failed");
    payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_else(|| payload.downcast_ref::<&str>().unwrap_or(&"?").to_string())
}

#[test]
fn a_port_another_server_holds_gets_a_new_one() {
    let foreign = Server::builder().without_module().start();
    let ours = Server::builder().start_picking(taken_first(foreign.port));
    assert_ne!(ours.port, foreign.port);
    assert_eq!(answering_pid(&ours), ours.pid().to_string());
    assert!(
        ours.log().contains("Address already in use"),
        "{}",
        ours.log()
    );
    assert_eq!(answering_pid(&foreign), foreign.pid().to_string());
}

#[test]
fn a_given_port_another_server_holds_fails_clearly() {
    let foreign = Server::builder().without_module().start();
    let port = foreign.port;
    let why = panic_text(|| {
        Server::builder().port(port).start();
    });
    assert!(
        why.contains(&format!("port {port} (or its bus port")),
        "{why}"
    );
    assert!(why.contains("held by another process"), "{why}");
    assert_eq!(answering_pid(&foreign), foreign.pid().to_string());
}

#[test]
fn a_restart_keeps_its_port_and_fails_clearly_when_it_was_taken() {
    let mut server = Server::start();
    let port = server.port;
    server.kill();
    let _holder = TcpListener::bind(("127.0.0.1", port)).expect("take the port");
    let why = panic_text(|| server.kill9_and_restart());
    assert!(
        why.starts_with(&format!("restart: redis-server: port {port} ")),
        "{why}"
    );
    assert_eq!(server.port, port);
}

#[test]
fn a_cluster_node_whose_bus_port_is_taken_gets_a_new_port() {
    let (port, _bus) = std::iter::repeat_with(taken_first(0))
        .skip(1)
        .filter(|port| *port < 55535)
        .find_map(|port| Some((port, TcpListener::bind(("127.0.0.1", port + 10000)).ok()?)))
        .expect("a port whose bus port is free");
    let ours = Server::builder()
        .arg("cluster-enabled", "yes")
        .start_picking(taken_first(port));
    assert_ne!(ours.port, port);
    assert!(
        ours.log().contains("Address already in use"),
        "{}",
        ours.log()
    );
    assert_eq!(answering_pid(&ours), ours.pid().to_string());
}
