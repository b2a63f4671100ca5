//! A TCP proxy in front of one server that breaks connections on cue, the way networks do:
//! after a command reached the server but before its reply got back, or on the client's side
//! only while the server keeps its end open; or holding back what the server sends (a
//! message read late, as by a paused process).

use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Proxy {
    pub port: u16,
    state: Arc<State>,
}

struct State {
    /// When a request containing this text passes, its reply is swallowed and both ends of
    /// that connection are closed. Fires once.
    drop_reply_to: Mutex<Option<String>>,
    /// Bumped to make every connection close its client end and keep the server end open. A
    /// watch, not a `Notify`: a connection busy forwarding bytes when the sever comes still
    /// sees it (`notify_waiters` wakes only those parked at that instant, and a missed sever
    /// once left a connection working, which read as a client that did not re-bind).
    sever: watch::Sender<u64>,
    /// Server ends kept open after a sever, until `close_kept`.
    kept: Mutex<Vec<TcpStream>>,
    /// While set, new connections are closed as soon as they are accepted.
    refusing: std::sync::atomic::AtomicBool,
    /// While true, what the server sends waits in the proxy (in order).
    holding: watch::Sender<bool>,
}

impl Proxy {
    pub async fn start(server_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(State {
            drop_reply_to: Mutex::default(),
            sever: watch::Sender::new(0),
            kept: Mutex::default(),
            refusing: Default::default(),
            holding: watch::Sender::new(false),
        });
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if shared.refusing.load(std::sync::atomic::Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let server = TcpStream::connect(("127.0.0.1", server_port))
                    .await
                    .expect("connect upstream");
                tokio::spawn(pump(client, server, shared.clone()));
            }
        });
        Proxy { port, state }
    }

    /// The next request that contains `text` (case-insensitive) reaches the server, and its
    /// connection breaks before the reply comes back.
    pub fn drop_reply_to(&self, text: &str) {
        *self.state.drop_reply_to.lock().unwrap() = Some(text.to_ascii_lowercase());
    }

    /// Closes the client end of every open connection; the server sees nothing.
    pub fn sever_client_ends(&self) {
        self.state.sever.send_modify(|epoch| *epoch += 1);
    }

    /// Closes new connections at once while `refuse` is true (a server out of reach).
    pub fn refuse(&self, refuse: bool) {
        self.state
            .refusing
            .store(refuse, std::sync::atomic::Ordering::SeqCst);
    }

    /// Holds back what the server sends on every connection while `hold` is true; false
    /// passes it on, in order.
    pub fn hold_replies(&self, hold: bool) {
        self.state.holding.send_replace(hold);
    }

    /// Closes the server ends kept by `sever_client_ends`.
    pub fn close_kept(&self) {
        self.state.kept.lock().unwrap().clear();
    }
}

impl State {
    /// Whether this request is the one to lose the reply of (and disarms it if so).
    fn fires_on(&self, request: &[u8]) -> bool {
        let request = String::from_utf8_lossy(request).to_ascii_lowercase();
        let mut armed = self.drop_reply_to.lock().unwrap();
        let fires = armed.as_deref().is_some_and(|text| request.contains(text));
        if fires {
            *armed = None;
        }
        fires
    }
}

async fn pump(mut client: TcpStream, mut server: TcpStream, state: Arc<State>) {
    let (mut from_client, mut from_server) = ([0u8; 16384], [0u8; 16384]);
    let mut swallow_reply = false;
    let mut sever = state.sever.subscribe();
    loop {
        tokio::select! {
            read = client.read(&mut from_client) => {
                let Ok(n @ 1..) = read else { return };
                swallow_reply |= state.fires_on(&from_client[..n]);
                if server.write_all(&from_client[..n]).await.is_err() {
                    return;
                }
            }
            read = server.read(&mut from_server) => {
                let Ok(n @ 1..) = read else { return };
                if swallow_reply {
                    return; // both ends close here: the reply is lost with the connection
                }
                if state.holding.subscribe().wait_for(|held| !held).await.is_err() {
                    return;
                }
                if client.write_all(&from_server[..n]).await.is_err() {
                    return;
                }
            }
            _ = sever.changed() => {
                state.kept.lock().unwrap().push(server);
                return;
            }
        }
    }
}
