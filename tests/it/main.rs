//! The integration tests, one binary (so `cargo test` links the crate once): real servers on
//! loopback ports, the real binary as a process, and MCP clients that are not ours' kin.

mod support;

mod aim;
mod bounds;
mod cli;
mod docs;
mod eval;
mod fan;
mod faults;
mod fuzz;
mod guard;
mod hostile;
mod hostile_mcp;
mod https;
mod identity;
mod keychain;
mod knobs;
#[cfg(unix)]
mod launcher;
mod load;
mod manifests;
mod mcp;
mod mcp_store;
mod metrics;
mod oauth;
mod overlay;
mod packet;
mod redact;
mod refuse;
mod reload;
mod rest;
mod settle;
mod traces;
mod views;
