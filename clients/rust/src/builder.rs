//! The builder methods every lock type shares (lease, wait, watchdog, hold cap, owner id,
//! confirmation, response timeout), written once as a macro over a type whose one field is
//! `core: Core`.

/// The builder methods every lock type shares, on a type whose one field is `core: Core`.
/// `$what` names what is held in the docs ("lock", "holding", "permits").
macro_rules! builder_methods {
    ($what:literal) => {
        builder_methods!(@shared $what);

        /// The key.
        pub fn key(&self) -> &str {
            self.core.key()
        }
    };
    ($what:literal, keys) => {
        builder_methods!(@shared $what);

        /// The keys, in the order their tokens come.
        pub fn keys(&self) -> &[String] {
            self.core.keys()
        }
    };
    (@shared $what:literal) => {
        #[doc = concat!("The lease (`PX`): how long the ", $what, " outlives a holder that ")]
        #[doc = "stops renewing it. With the watchdog the server renews it while the"]
        #[doc = "connection lives; without, it is the holding's whole life unless released"]
        #[doc = "first. Default 30 s."]
        pub fn lease(self, lease: std::time::Duration) -> Self {
            Self {
                core: self.core.lease(lease),
            }
        }

        /// Wait up to `limit` in the server's FIFO queue when it cannot be granted at once
        /// (`WAIT`). Without it, acquiring tries once.
        ///
        /// A waiting handle blocks no connection: it waits with `WAIT ms NOTIFY` on the one
        /// RESP3 connection that all waiting handles of the same `redis::Client` share (in
        /// the same tokio runtime), and is told of its grant by a message on that
        /// connection's channel. Its holdings live on that connection too (a `watchdog` one
        /// is bound to it). Dropping the acquiring future leaves the queue (`RLOCK.CANCEL`,
        /// and a grant that raced it is released); the module must support `NOTIFY` (its
        /// docs/notify.md).
        pub fn wait(self, limit: std::time::Duration) -> Self {
            Self {
                core: self.core.wait(limit),
            }
        }

        /// Wait in the queue until granted (`WAIT 0`).
        pub fn wait_forever(self) -> Self {
            Self {
                core: self.core.wait_forever(),
            }
        }

        #[doc = concat!("On by default: the server renews the ", $what, " while this ")]
        #[doc = "handle's connection lives, and ends the holding at once when it closes"]
        #[doc = "(`WATCHDOG`). The client `PING`s that connection and re-binds from a new one"]
        #[doc = "if it drops."]
        pub fn watchdog(self, on: bool) -> Self {
            Self {
                core: self.core.watchdog(on),
            }
        }

        /// Cap the holding at its grant time + `cap` however it is renewed (`MAXHOLD`): the
        /// watchdog cannot keep a holding whose holder hangs on a busy connection for ever.
        pub fn max_hold(self, cap: std::time::Duration) -> Self {
            Self {
                core: self.core.max_hold(cap),
            }
        }

        /// Use `owner` as this handle's owner id instead of a fresh one. An owner is one
        /// thread of control: give the handles of the different keys one task takes the same
        /// id, so that the server sees which locks that task holds while it waits for
        /// another, and refuses a wait that would close a cycle at once
        /// ([`Error::Deadlock`](crate::Error::Deadlock)) rather than let it run out. Handles
        /// sharing an id re-enter each other's holdings of the same key, so give different
        /// tasks different ids (for example [`Lock::owner`](crate::Lock::owner) of one
        /// handle each).
        pub fn owner_id(self, owner: impl Into<String>) -> Self {
            Self {
                core: self.core.owner_id(owner.into()),
            }
        }

        /// How the replicas confirm this handle's acquisitions and releases (default: the
        /// servers', [`Confirm::auto`](crate::Confirm::auto)). An acquisition not confirmed
        /// in time is released and fails with
        /// [`Error::NotConfirmed`](crate::Error::NotConfirmed).
        pub fn confirm(self, confirm: crate::Confirm) -> Self {
            Self {
                core: self.core.confirm(confirm),
            }
        }

        /// How long a reply may take (beyond a `wait`) before the call counts as failed and
        /// is retried once on a fresh connection. Default 2 s.
        pub fn response_timeout(self, timeout: std::time::Duration) -> Self {
            Self {
                core: self.core.response_timeout(timeout),
            }
        }

        /// This handle's owner id, as the server's `INFO` commands show it.
        pub fn owner(&self) -> &str {
            self.core.owner()
        }
    };
}
pub(crate) use builder_methods;
