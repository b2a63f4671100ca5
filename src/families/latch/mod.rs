//! The count-down latch (`RLATCH.*`): waiters are let in together when the count reaches 0.
//! Its key is Redisson's `RCountDownLatch` string count.

pub mod commands;
pub mod family;
pub mod serve;
pub mod table;
