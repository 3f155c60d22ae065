//! One module per command group.

pub mod audit;
pub mod index;
pub mod init;
pub mod safety;
pub mod tools;
