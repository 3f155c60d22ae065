//! One module per command group.

pub mod audit;
pub mod init;
pub mod tools;
