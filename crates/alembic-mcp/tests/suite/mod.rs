mod calls;
mod cancel_progress;
mod http;
mod http_auth;
mod support;
mod surface;
mod transport;
