//! The [`Family`]: a lock type's command set (`RLOCK`, `RWLOCK`, `RSEM`, `RLATCH`) and the
//! word its messages name it by.

use redis::{Cmd, RedisWrite};
use std::io::Write;

/// What a holding (or a wait) is of: the command family, and for a read-write lock the mode,
/// for a semaphore the permits. It names the commands to send and the `type` word of the
/// server's messages (docs/notify.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Family {
    /// `RLOCK.*`
    Lock,
    /// `RWLOCK.* READ`
    Read,
    /// `RWLOCK.* WRITE`
    Write,
    /// `RSEM.* PERMITS n`
    Permits(u32),
    /// `RLATCH.AWAIT`: a wait with no owner and nothing held after it.
    Latch,
}

impl Family {
    pub(crate) fn prefix(self) -> &'static str {
        match self {
            Family::Lock => "RLOCK",
            Family::Read | Family::Write => "RWLOCK",
            Family::Permits(_) => "RSEM",
            Family::Latch => "RLATCH",
        }
    }

    /// `<P>.<verb>`, in a command with room for `args` more arguments of `bytes` in all: built
    /// without a formatted name or a reallocation as the arguments are added.
    pub(crate) fn command(self, verb: &str, args: usize, bytes: usize) -> Cmd {
        let prefix = self.prefix();
        let mut cmd = Cmd::with_capacity(1 + args, prefix.len() + 1 + verb.len() + bytes);
        let mut name = cmd.writer_for_next_arg();
        for part in [prefix, ".", verb] {
            name.write_all(part.as_bytes()).expect("writes to a Vec");
        }
        drop(name);
        cmd
    }

    /// The arguments that follow key and owner: the mode, or the permits.
    pub(crate) fn add_mode(self, cmd: &mut Cmd) {
        match self {
            Family::Read => {
                cmd.arg("READ");
            }
            Family::Write => {
                cmd.arg("WRITE");
            }
            Family::Permits(n) => {
                cmd.arg("PERMITS").arg(n);
            }
            Family::Lock | Family::Latch => {}
        }
    }

    /// The `type` word of the messages about this kind of wait or holding.
    pub(crate) fn word(self) -> &'static [u8] {
        match self {
            Family::Lock => b"lock",
            Family::Read => b"read",
            Family::Write => b"write",
            Family::Permits(_) => b"permits",
            Family::Latch => b"latch",
        }
    }

    /// The kind a message's `type` word names, where the word says all of it (not for
    /// permits, whose number it does not give, nor a latch).
    pub(crate) fn from_word(word: &[u8]) -> Option<Family> {
        match word {
            b"lock" => Some(Family::Lock),
            b"read" => Some(Family::Read),
            b"write" => Some(Family::Write),
            _ => None,
        }
    }

    /// Whether a `type` word speaks of holdings of this kind's family (a `lost` for a
    /// read-write lock names the mode of the owner's latest grant).
    pub(crate) fn same_family(self, word: &[u8]) -> bool {
        match self {
            Family::Read | Family::Write => word == b"read" || word == b"write",
            _ => word == self.word(),
        }
    }

    /// Whether a wait of this kind ends with something held (to give back when nobody takes
    /// it). A latch that opens holds nothing.
    pub(crate) fn holds(self) -> bool {
        self != Family::Latch
    }
}
