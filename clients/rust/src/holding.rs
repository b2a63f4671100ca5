//! The [`Holding`]: one granted hold as the guard keeps it, by where it lives and is released.

use crate::notify::NotifiedHolding;
use crate::session::Session;
use crate::watchdog::Binding;
use std::sync::Arc;

/// Where a holding is released: the lock handle's shared session, the holding's own watchdog
/// connection (which must stay open until then, or the server ends the holding), or the
/// connection shared by the client's waits, which a waiting handle's holdings live on.
#[derive(Clone)]
pub(crate) enum Holding {
    Plain(Arc<Session>),
    Bound(Arc<Binding>),
    Notified(Arc<NotifiedHolding>),
}

impl Holding {
    pub(crate) fn session(&self) -> &Session {
        match self {
            Holding::Plain(session) => session,
            Holding::Bound(binding) => &binding.session,
            Holding::Notified(holding) => holding.session(),
        }
    }

    /// A guard gave its hold back (or gave up on it); `remaining`: the server's answer, the
    /// owner's holds left at the key (`None`: none came, or the holding was gone).
    pub(crate) fn released(&self, remaining: Option<i64>) {
        match self {
            Holding::Bound(binding) => binding.released(remaining),
            Holding::Notified(holding) => holding.released(),
            Holding::Plain(_) => {}
        }
    }
}
