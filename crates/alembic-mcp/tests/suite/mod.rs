mod calls;
mod cancel_progress;
mod support;
mod transport;
