//! The counting semaphore (`RCSEM.*`): permits that belong to nobody once taken, as in
//! `java.util.concurrent.Semaphore` and Redisson's `RSemaphore`: any client releases, a
//! release beyond what was taken adds permits, and a crashed client's permits are not
//! returned (no leases). Its key is Redisson's `RSemaphore` string counter, nothing else.

pub mod commands;
pub mod family;
pub mod rules;
pub mod serve;
pub mod table;
