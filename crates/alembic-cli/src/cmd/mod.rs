//! One module per command group.

pub mod audit;
pub mod forge;
pub mod index;
pub mod init;
pub mod safety;
pub mod tools;
