mod durability;
mod locomo;
mod mcp_http;
mod monorepo;
mod team_mix;
