//! The semaphore (`RSEM.*`): owned, leased permits that come back when their holder's lease
//! ends. Its keys are Redisson's `RPermitExpirableSemaphore` counter (a string of available
//! permits) and a holders hash beside it.

pub mod commands;
pub mod each;
pub mod family;
pub mod rules;
pub mod serve;
pub mod store;
pub mod table;
