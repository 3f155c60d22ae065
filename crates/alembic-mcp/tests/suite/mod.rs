mod calls;
mod cancel_progress;
mod http;
mod http_auth;
mod http_oauth;
mod support;
mod surface;
mod transport;
