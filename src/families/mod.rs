//! The lock families, one folder each: its pure rules, its storage in Redisson's layout, how
//! its queue is served (its `queue::Admission`), what upkeep asks of it (its `Family`, in
//! `family.rs`), its commands and their table. A family uses the shared rooms below it (queue,
//! holdings, watch, lifetime, store, clock, args, errors, replies) and never another family.
//!
//! The family table below is the one place that names them: a new family is a new folder and
//! one line there. Upkeep sits below this table (it is reached from the families' commands), so
//! it finds the families through `contract`, where `lib.rs` registers them at load.

pub mod contract;
pub mod handover;

use crate::command::Command;
pub use contract::Family;

/// Declares each family's folder and lists it once, by its `Family` in `family.rs`: what upkeep
/// asks of it, and the commands Redis learns from its `table.rs`.
macro_rules! family_table {
    ($($folder:ident: $family:ident,)*) => {
        $(pub mod $folder;)*

        /// Every family, as upkeep reaches it.
        pub static FAMILIES: &[&dyn Family] = &[$(&$folder::family::$family),*];

        /// Every family's commands.
        pub const COMMANDS: &[&[Command]] = &[$($folder::table::COMMANDS),*];
    };
}

family_table! {
    lock: Plain,
    rwlock: ReadWrite,
    semaphore: Permits,
    latch: Latch,
    counting: Counting,
}

/// Makes the families known to upkeep and lets each prepare what it keeps for the module's
/// life. Call from OnLoad.
pub fn load() {
    contract::register(FAMILIES);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waiter's word names one family (the queue and `NOTIFY` messages know it by no more).
    #[test]
    fn each_word_is_one_familys_and_one_word() {
        let words: Vec<&str> = FAMILIES
            .iter()
            .flat_map(|f| f.words())
            .map(|w| w.0)
            .collect();
        for word in &words {
            let owners = words.iter().filter(|w| w == &word).count();
            assert_eq!(owners, 1, "{word} names {owners} waiters' wants");
            let plain = !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase());
            assert!(plain, "{word:?}: a message's type is one lowercase word");
        }
        assert!(words.len() >= FAMILIES.len(), "every family has a word");
    }
}
