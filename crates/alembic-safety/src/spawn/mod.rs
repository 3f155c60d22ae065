//! The one place in the workspace that starts processes.
//!
//! Every child gets: a working directory opened through [`PathGuard`] (the
//! child `fchdir`s to that handle, so a swapped path cannot move it), an
//! environment built from an allow-list (no tokens, keys or proxies leak),
//! stdin from `/dev/null`, its own process group, `no_new_privs`, every
//! inherited descriptor above 2 marked close-on-exec, and a timeout clamped
//! to [`MAX_TIMEOUT`] after which the whole group is killed. Output is kept
//! as head + tail with a marker, so memory and context stay bounded.
//!
//! ```
//! use alembic_safety::{PathGuard, spawn::{SpawnRequest, run}};
//! # let dir = tempfile::tempdir()?;
//! let guard = PathGuard::new(dir.path())?;
//! let out = run(&guard, SpawnRequest::new("echo").arg("hi"))?;
//! assert_eq!((out.exit_code, out.stdout.as_str()), (Some(0), "hi\n"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod capture;
mod landlock;

pub use landlock::available as landlock_available;

use alembic_base::lock;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::fs::OFlags;
use serde::Serialize;

use crate::path::{PathError, PathGuard};
use capture::HeadTail;

/// Longest a child may run, whatever the caller asks for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(120);
/// Default timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default bytes kept per stream (half head, half tail).
pub const DEFAULT_OUTPUT_LIMIT: usize = 16 * 1024;
/// How long readers may drain pipes after the group was killed (a grandchild
/// that left the group could hold them open forever).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Variables copied from the parent environment when set. Nothing else is inherited.
/// Toolchain locations are inherited too (they hold no secrets), because
/// `HOME` is the project root and rustup/cargo proxies would not find them otherwise.
pub const INHERITED_ENV: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "RUSTUP_HOME",
    "CARGO_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOROOT",
    "GOPATH",
    "JAVA_HOME",
];

/// What to run.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    program: String,
    args: Vec<String>,
    cwd: String,
    timeout: Duration,
    output_limit: usize,
    env: Vec<(String, String)>,
    cancel: Option<Arc<AtomicBool>>,
    sandbox: Option<Vec<PathBuf>>,
    /// Extra read-only directories inside the sandbox (a linked worktree's git dirs).
    readable: Vec<PathBuf>,
}

impl SpawnRequest {
    /// Runs `program` (looked up on the allow-listed `PATH`) in the project root.
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: ".".to_owned(),
            timeout: DEFAULT_TIMEOUT,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            env: Vec::new(),
            cancel: None,
            sandbox: None,
            readable: Vec::new(),
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Working directory relative to the root (checked by the guard).
    pub fn cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = cwd.into();
        self
    }

    /// Timeout; clamped to [`MAX_TIMEOUT`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.min(MAX_TIMEOUT);
        self
    }

    /// Bytes kept per stream (head + tail).
    pub fn output_limit(mut self, bytes: usize) -> Self {
        self.output_limit = bytes.max(64);
        self
    }

    /// Sets a variable chosen by trusted code (for example git hardening);
    /// model-controlled values must never reach here.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// A flag that, once set, kills the process group like a timeout.
    pub fn cancel_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// Sandboxes the child with Landlock: writes only beneath the project root,
    /// `/dev/null`, `extra_dirs` and a fresh private temp dir (`TMPDIR`, removed
    /// afterwards); reads only there and in the system paths a program needs to
    /// start (see `landlock.rs`): not `/tmp`, `/proc`, homes or toolchain caches.
    /// Where the kernel has no Landlock the child runs anyway and
    /// [`ProcessOutput::sandboxed`] is false.
    pub fn sandbox(mut self, extra_dirs: Vec<PathBuf>) -> Self {
        self.sandbox = Some(extra_dirs);
        self
    }

    /// Directories outside the root the sandboxed child may read, never write: only what
    /// the caller has vetted (the git directories of this checkout's own linked worktree).
    pub fn readable(mut self, dirs: Vec<PathBuf>) -> Self {
        self.readable = dirs;
        self
    }

    /// The effective timeout.
    pub fn effective_timeout(&self) -> Duration {
        self.timeout
    }
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessOutput {
    /// Exit code, when the process exited normally.
    pub exit_code: Option<i32>,
    /// Signal that ended it, when killed.
    pub signal: Option<i32>,
    /// True when the timeout expired and the group was killed.
    pub timed_out: bool,
    /// True when the cancel flag was set and the group was killed.
    pub cancelled: bool,
    /// Standard output (head + tail when long).
    pub stdout: String,
    /// Standard error (head + tail when long).
    pub stderr: String,
    /// Bytes written to stdout in all.
    pub stdout_bytes: u64,
    /// Bytes written to stderr in all.
    pub stderr_bytes: u64,
    /// True when either stream was shortened.
    pub truncated: bool,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// True when Landlock confined the child's reads and writes.
    pub sandboxed: bool,
}

/// Why a process could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The program name is empty or contains a NUL byte.
    #[error("program name {program:?} is invalid: give a program name such as \"ls\"")]
    InvalidProgram {
        /// Program as given.
        program: String,
    },
    /// The working directory was refused by the guard.
    #[error("working directory refused: {0}")]
    Cwd(#[from] PathError),
    /// The program was not found on the allowed `PATH`.
    #[error("program {program:?} not found on PATH")]
    NotFound {
        /// Program as given.
        program: String,
    },
    /// The private temp directory for a sandboxed child could not be created.
    #[error("creating the private temp directory failed: {source}")]
    TempDir {
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The operating system refused to start it.
    #[error("starting {program:?} failed: {source}")]
    Spawn {
        /// Program as given.
        program: String,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Runs a request to completion, the timeout or cancellation.
pub fn run(guard: &PathGuard, request: SpawnRequest) -> Result<ProcessOutput, SpawnError> {
    if request.program.is_empty() || request.program.contains('\0') {
        return Err(SpawnError::InvalidProgram {
            program: request.program,
        });
    }
    let cwd_fd = guard.open_dir(&request.cwd)?;
    // Removed when this function returns, after the whole group was killed.
    let private_tmp = match request.sandbox {
        Some(_) => Some(private_tmp_dir()?),
        None => None,
    };
    let tmp_path = private_tmp.as_ref().map(|t| t.path().to_owned());
    let ruleset = request.sandbox.as_ref().and_then(|extra| {
        let mut writable = extra.clone();
        writable.extend(tmp_path.clone());
        landlock::sandbox_ruleset(guard.root(), &writable, &request.readable)
    });
    let sandboxed = ruleset.is_some();
    let started = Instant::now();
    let mut child = start(guard, &request, cwd_fd, ruleset, tmp_path.as_deref())?;
    let pid = child.id();
    let stdout = drain(child.stdout.take(), request.output_limit);
    let stderr = drain(child.stderr.take(), request.output_limit);
    let (status, timed_out, cancelled) = wait(child, pid, &request);
    // Kill whatever the child left behind in its group (background jobs), so
    // nothing outlives the call and the pipes close.
    kill_group(pid);
    let deadline = Instant::now() + DRAIN_GRACE;
    let (stdout, stdout_bytes, out_cut) = stdout.finish(deadline);
    let (stderr, stderr_bytes, err_cut) = stderr.finish(deadline);
    Ok(ProcessOutput {
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        cancelled,
        stdout,
        stderr,
        stdout_bytes,
        stderr_bytes,
        truncated: out_cut || err_cut,
        duration_ms: alembic_base::millis(started.elapsed()),
        sandboxed,
    })
}

/// A fresh, private (0700) directory for one sandboxed child's temporary files.
fn private_tmp_dir() -> Result<tempfile::TempDir, SpawnError> {
    tempfile::Builder::new()
        .prefix("alembic-cmd-")
        .tempdir()
        .map_err(|source| SpawnError::TempDir { source })
}

/// Builds the allow-listed environment.
pub fn allowed_env(root: &std::path::Path) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = INHERITED_ENV
        .iter()
        .filter_map(|key| std::env::var(key).ok().map(|v| ((*key).to_owned(), v)))
        .collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    // Default rustup/cargo homes live under the real HOME, which children do not see.
    if let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from) {
        for (key, dir) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
            let path = home.join(dir);
            if !env.iter().any(|(k, _)| k == key) && path.is_dir() {
                env.push((key.to_owned(), path.to_string_lossy().into_owned()));
            }
        }
    }
    let fixed = [
        ("HOME", root.to_string_lossy().into_owned()),
        ("TERM", "dumb".to_owned()),
        ("PAGER", "cat".to_owned()),
        ("GIT_PAGER", "cat".to_owned()),
        ("LESS", "-FRX".to_owned()),
        ("NO_COLOR", "1".to_owned()),
        ("GIT_TERMINAL_PROMPT", "0".to_owned()),
        ("GIT_CONFIG_NOSYSTEM", "1".to_owned()),
        ("GIT_CONFIG_GLOBAL", "/dev/null".to_owned()),
        // Never let a rust-toolchain.toml in the project download a toolchain.
        ("RUSTUP_AUTO_INSTALL", "0".to_owned()),
    ];
    env.extend(fixed.into_iter().map(|(k, v)| (k.to_owned(), v)));
    env
}

fn start(
    guard: &PathGuard,
    request: &SpawnRequest,
    cwd_fd: OwnedFd,
    ruleset: Option<OwnedFd>,
    tmp: Option<&std::path::Path>,
) -> Result<Child, SpawnError> {
    #[expect(
        clippy::disallowed_methods,
        reason = "this is the one spawn function; it enforces cwd, env and timeout"
    )]
    let mut command = Command::new(&request.program);
    command
        .args(&request.args)
        .env_clear()
        .envs(allowed_env(guard.root()))
        .envs(request.env.iter().map(|(k, v)| (k, v)))
        .envs(tmp.map(|t| ("TMPDIR", t)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let raw_cwd = cwd_fd.as_raw_fd();
    let raw_ruleset = ruleset.as_ref().map(AsRawFd::as_raw_fd);
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls (fchdir, prctl, close_range, fcntl); it
    // allocates nothing and takes no locks.
    unsafe {
        command.pre_exec(move || harden_child(raw_cwd, raw_ruleset));
    }
    let child = command.spawn().map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => SpawnError::NotFound {
            program: request.program.clone(),
        },
        _ => SpawnError::Spawn {
            program: request.program.clone(),
            source,
        },
    });
    drop(cwd_fd);
    drop(ruleset);
    child
}

/// Runs in the child between fork and exec.
fn harden_child(cwd_fd: i32, ruleset_fd: Option<i32>) -> std::io::Result<()> {
    // SAFETY: plain system calls on integers; see the caller.
    unsafe {
        if libc::fchdir(cwd_fd) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    // Fail closed: a ruleset that cannot be applied stops the spawn.
    if let Some(fd) = ruleset_fd {
        landlock::restrict_self(fd)?;
    }
    // SAFETY: as above.
    unsafe {
        // Mark (not close) every descriptor above 2 close-on-exec: the standard
        // library's own error pipe must stay open until exec.
        let flag = libc::CLOSE_RANGE_CLOEXEC as libc::c_long;
        if libc::syscall(libc::SYS_close_range, 3_i64, i64::from(u32::MAX), flag) != 0 {
            for fd in 3..4096 {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
    Ok(())
}

/// Waits for exit, the timeout or cancellation; kills the group on the latter two.
fn wait(mut child: Child, pid: u32, request: &SpawnRequest) -> (Option<ExitStatus>, bool, bool) {
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait().ok());
    });
    let deadline = Instant::now() + request.timeout;
    let tick = Duration::from_millis(50);
    let (mut timed_out, mut cancelled) = (false, false);
    let status = loop {
        let cancel = request
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed));
        let now = Instant::now();
        if cancel || now >= deadline {
            (timed_out, cancelled) = (!cancel, cancel);
            kill_group(pid);
            break rx.recv().ok().flatten();
        }
        match rx.recv_timeout(tick.min(deadline - now)) {
            Ok(status) => break status,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break None,
        }
    };
    let _ = waiter.join();
    (status, timed_out, cancelled)
}

fn kill_group(pid: u32) {
    if let Some(pgid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        // ESRCH (group already gone) is the normal case.
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }
}

/// A reader thread filling a bounded capture.
struct Drain {
    capture: Arc<Mutex<HeadTail>>,
    done: mpsc::Receiver<()>,
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>, limit: usize) -> Drain {
    let capture = Arc::new(Mutex::new(HeadTail::new(limit)));
    let (tx, done) = mpsc::channel();
    let shared = capture.clone();
    std::thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let mut buf = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                lock(&shared).push(&buf[..n]);
            }
        }
        let _ = tx.send(());
    });
    Drain { capture, done }
}

impl Drain {
    /// Text, total bytes and whether it was cut, after the reader finished or the deadline passed.
    fn finish(self, deadline: Instant) -> (String, u64, bool) {
        let _ = self
            .done
            .recv_timeout(deadline.saturating_duration_since(Instant::now()));
        let capture = lock(&self.capture);
        (capture.render(), capture.total(), capture.truncated())
    }
}

impl PathGuard {
    /// Opens a directory beneath the root for use as a working directory.
    pub(crate) fn open_dir(&self, path: &str) -> Result<OwnedFd, PathError> {
        self.open_checked(path, OFlags::PATH | OFlags::DIRECTORY)
    }
}
