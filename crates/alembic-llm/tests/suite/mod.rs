mod config;
mod golden;
mod malformed;
mod reliability;
mod round_trip;
mod streaming;
mod support;
