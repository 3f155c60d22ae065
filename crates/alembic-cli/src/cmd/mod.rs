//! One module per command group.

pub mod ask;
pub mod audit;
pub mod bootstrap;
pub mod chat;
pub mod forge;
pub mod index;
pub mod init;
pub mod knowledge;
pub mod mcp;
pub mod memory;
pub mod safety;
pub mod team;
pub mod tools;
