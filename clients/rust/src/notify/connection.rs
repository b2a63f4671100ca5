//! The upkeep of the shared connection: the hooks that subscribe each fresh connection to
//! its channel and re-bind the watchdog holdings onto it, and the subscriber's one task, which
//! keeps the connection alive and gives back grants that no waiter claimed.

use super::{Chore, Dispatcher};
use crate::commands::{self, Family};
use crate::session::{within, BoxFuture, Hooks, Session};
use crate::watchdog;
use redis::aio::{AsyncPushSender, MultiplexedConnection};
use redis::{PushInfo, RedisResult};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// The hooks of the shared connection: its pushes go to the dispatcher, and each fresh
/// connection subscribes to its channel and re-binds the watchdog holdings before use.
pub(super) struct SubscriberHooks {
    pub(super) dispatcher: Arc<Dispatcher>,
    pub(super) response_timeout: Duration,
}

impl Hooks for SubscriberHooks {
    fn push_sender(&self, generation: u64) -> Arc<dyn AsyncPushSender> {
        let dispatcher = self.dispatcher.clone();
        Arc::new(move |info: PushInfo| {
            dispatcher.push(generation, info);
            Ok::<(), ()>(())
        })
    }

    fn setup<'a>(
        &'a self,
        conn: &'a mut MultiplexedConnection,
        generation: u64,
    ) -> BoxFuture<'a, RedisResult<()>> {
        Box::pin(async move {
            let prepare = async {
                let channel: Vec<u8> = commands::channel().query_async(conn).await?;
                conn.subscribe(&channel).await?;
                if generation > 1 {
                    self.rebind(conn).await?;
                }
                Ok(())
            };
            let what = "while preparing the notify connection";
            within(self.response_timeout, what, prepare).await
        })
    }
}

impl SubscriberHooks {
    /// Moves every live watchdog holding onto the fresh connection `conn`; those the server
    /// no longer knows (`0`) are lost.
    async fn rebind(&self, conn: &MultiplexedConnection) -> RedisResult<()> {
        let mut renewals = JoinSet::new();
        for holding in self.dispatcher.live_watchdog_holdings() {
            let mut conn = conn.clone();
            renewals.spawn(async move {
                let cmd =
                    commands::rebind(holding.kind, &holding.key, &holding.owner, holding.lease);
                let still_ours: i64 = cmd.query_async(&mut conn).await?;
                if still_ours == 0 && holding.holds.load(Ordering::SeqCst) > 0 {
                    holding.mark_lost();
                }
                RedisResult::Ok(())
            });
        }
        while let Some(done) = renewals.join_next().await {
            done.map_err(|err| std::io::Error::other(err.to_string()))??;
        }
        Ok(())
    }
}

/// The one task of a subscriber: `PING` every third of the server's idle bound, and at once
/// when the connection reports a drop (the `PING` then opens a fresh connection, which
/// re-subscribes and re-binds); and the releases of unclaimed grants. A server that cannot be
/// reached for a whole lease has surely let that lease run out: those holdings are lost.
pub(super) async fn maintain(
    session: Arc<Session>,
    dispatcher: Arc<Dispatcher>,
    mut chores: mpsc::UnboundedReceiver<Chore>,
) {
    let every = watchdog::ping_interval(&session).await;
    let mut last_contact = Instant::now();
    let mut next_ping = tokio::time::Instant::now() + every;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next_ping) => {}
            chore = chores.recv() => match chore {
                None => return,
                Some(Chore::Release { kind, key, owner }) => {
                    tokio::spawn(release(session.clone(), kind, key, owner));
                    continue;
                }
                Some(Chore::Reconnect) => {}
            },
        }
        while !watchdog::ping(&session, &mut last_contact).await {
            let silent = last_contact.elapsed();
            let mut waiting_for = 0;
            for holding in dispatcher.live_watchdog_holdings() {
                if silent >= holding.lease {
                    holding.mark_lost();
                } else {
                    waiting_for += 1;
                }
            }
            if waiting_for == 0 {
                break;
            }
            tokio::time::sleep(watchdog::RECONNECT_PAUSE).await;
        }
        next_ping = tokio::time::Instant::now() + every;
    }
}

/// The release of one grant, its answer ignored: for grants nobody is waiting for.
pub(super) async fn release(session: Arc<Session>, kind: Family, key: Vec<u8>, owner: Vec<u8>) {
    let cmd = commands::release(kind, &key, &owner, &commands::request_id());
    let _: RedisResult<Option<i64>> = session.call(&cmd, Some(Duration::ZERO)).await;
}
