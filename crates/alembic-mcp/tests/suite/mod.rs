mod calls;
mod cancel_progress;
mod http;
mod support;
mod surface;
mod transport;
