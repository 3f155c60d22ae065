//! Anchors §7.4: every escape or exhaustion attempt ends in a typed error, the host stays
//! healthy, and the next run is clean.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use alembic_forge::sandbox::{self, SandboxError, SandboxLimits, ToolBridge};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn limits() -> SandboxLimits {
    SandboxLimits {
        heap_bytes: 32 * 1024 * 1024,
        cpu_budget: Duration::from_millis(300),
        wall_clock: Duration::from_secs(10),
        ..SandboxLimits::default()
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn run_with(
    code: &str,
    params: Value,
    bridge: ToolBridge,
    limits: &SandboxLimits,
) -> Result<Value, SandboxError> {
    rt().block_on(sandbox::run(code, &params, bridge, limits))
        .map(|r| r.output)
}

fn run(code: &str) -> Result<Value, SandboxError> {
    run_with(code, json!({}), sandbox::no_tools(), &limits())
}

/// After any failure the next run in a fresh context must work and see a clean global.
fn assert_next_run_clean() {
    let out = run(
        "function toolHandler(p) { return [typeof globalThis.x, [1,2].map(v => v * 2), ({}).isAdmin === undefined]; }",
    );
    assert_eq!(out, Ok(json!(["undefined", [2, 4], true])));
}

fn handler(body: &str) -> String {
    format!("function toolHandler(params, tools) {{ {body} }}")
}

fn async_handler(body: &str) -> String {
    format!("async function toolHandler(params, tools) {{ {body} }}")
}

#[test]
fn a_plain_handler_gets_params_and_returns_json() {
    let out = run_with(
        &handler("return {sum: params.a + params.b, s: 'é'};"),
        json!({"a": 2, "b": 3}),
        sandbox::no_tools(),
        &limits(),
    );
    assert_eq!(out, Ok(json!({"sum": 5, "s": "é"})));
    let out = run(&async_handler(
        "const v = await Promise.resolve(41); return v + 1;",
    ));
    assert_eq!(out, Ok(json!(42)));
    assert_eq!(run(&handler("return;")), Ok(Value::Null));
}

#[test]
fn cpu_exhaustion_is_interrupted() {
    let budget = SandboxError::CpuBudget { budget_ms: 300 };
    for (case, code) in [
        ("1 infinite loop", handler("while (true) {}")),
        (
            "2 uncatchable timeout",
            handler("for (;;) { try { while (true) {} } catch (e) {} }"),
        ),
        (
            "4 microtask flood",
            handler(
                "function f() { Promise.resolve().then(f) } f(); return new Promise(() => {});",
            ),
        ),
        (
            "4b async microtask flood",
            async_handler("for (;;) { await null; }"),
        ),
        (
            "10 ReDoS",
            handler("return /^(a+)+$/.test('a'.repeat(40) + '!');"),
        ),
        (
            "10b ReDoS",
            handler("return /(x+x+)+y/.test('x'.repeat(50));"),
        ),
        (
            "20 console.log loop",
            handler("for (;;) console.log('spam spam spam');"),
        ),
    ] {
        assert_eq!(run(&code), Err(budget.clone()), "{case}");
        assert_next_run_clean();
    }
}

#[test]
fn a_promise_that_never_settles_is_reported_not_awaited() {
    assert_eq!(
        run(&async_handler("await new Promise(() => {});")),
        Err(SandboxError::NeverSettles)
    );
    assert_next_run_clean();
}

#[test]
fn memory_exhaustion_hits_the_heap_limit() {
    let mem = SandboxError::MemoryLimit {
        limit_bytes: 32 * 1024 * 1024,
    };
    for (case, code) in [
        (
            "5 array growth",
            handler("let a = []; while (true) a.push(new Array(1e6).fill(1));"),
        ),
        (
            "6 string doubling",
            handler("let s = 'x'; while (true) s += s;"),
        ),
        (
            "7 ArrayBuffer",
            handler("return new ArrayBuffer(2 ** 31).byteLength;"),
        ),
        (
            "7b Uint8Array",
            handler("return new Uint8Array(2 ** 30).length;"),
        ),
    ] {
        assert_eq!(run(&code), Err(mem.clone()), "{case}");
        assert_next_run_clean();
    }
}

#[test]
fn deep_recursion_hits_the_stack_limit() {
    for (case, code) in [
        (
            "8 recursion",
            handler("function f() { return f() } return f();"),
        ),
        (
            "9 JSON.parse nesting",
            handler("return JSON.parse('['.repeat(1e6) + ']'.repeat(1e6));"),
        ),
    ] {
        assert_eq!(run(&code), Err(SandboxError::StackOverflow), "{case}");
        assert_next_run_clean();
    }
}

#[test]
fn no_ambient_capabilities_exist() {
    // 14, 15: only the guest realm is reachable, and it has no way out.
    let probe = handler(
        "const g = Function('return this')();
         const viaCtor = this === undefined ? g : this.constructor.constructor('return globalThis')();
         const names = ['require', 'process', 'fetch', 'std', 'os', 'Deno', 'Worker', 'XMLHttpRequest',
                        'WebSocket', 'setTimeout', 'setInterval', 'FinalizationRegistry',
                        'WeakRef', 'SharedArrayBuffer', 'Atomics', 'performance', 'scriptArgs', 'print', 'module', 'exports'];
         return { sameGlobal: viaCtor === g, present: names.filter(n => typeof g[n] !== 'undefined') };",
    );
    assert_eq!(run(&probe), Ok(json!({"sameGlobal": true, "present": []})));
    for (case, code) in [
        (
            "file import",
            async_handler("return await import('file:///etc/passwd');"),
        ),
        (
            "https import",
            async_handler("return await import('https://x.example/m.js');"),
        ),
        (
            "os module",
            async_handler("const os = await import('os'); return os.exec(['true']);"),
        ),
        (
            "Worker",
            handler("return new Worker('data:text/javascript,1');"),
        ),
    ] {
        let got = run(&code);
        assert!(
            matches!(got, Err(SandboxError::Thrown { .. })),
            "{case}: {got:?}"
        );
    }
    assert_next_run_clean();
}

#[test]
fn prototype_pollution_stays_in_the_guest() {
    // 11: a `__proto__` key is plain data on the host.
    let out = run(&handler("return JSON.parse('{\"__proto__\": {\"isAdmin\": true}, \"constructor\": {\"prototype\": {\"x\": 1}}}');")).unwrap();
    assert_eq!(
        out,
        json!({"__proto__": {"isAdmin": true}, "constructor": {"prototype": {"x": 1}}})
    );
    // 23: patches of the guest's built-ins do not survive the run.
    let out = run(&handler("globalThis.x = 1; Array.prototype.map = () => 'patched'; Object.prototype.isAdmin = true; return [1].map(v => v);")).unwrap();
    assert_eq!(out, json!("patched"));
    assert_next_run_clean();
}

#[test]
fn stack_traces_hold_no_host_objects() {
    // 13: V8's prepareStackTrace hook does not exist in QuickJS; `stack` stays a string.
    let code = handler(
        "Error.prepareStackTrace = (e, cs) => cs.map(c => [typeof c.getThis(), typeof c.getFunction()]); function inner() { return new Error('x').stack; } return inner();",
    );
    let out = run(&code).unwrap().to_string();
    assert!(
        !out.contains("object") && !out.contains("function"),
        "{out}"
    );
}

#[test]
fn results_must_be_bounded_json() {
    // 19: huge, cyclic, BigInt and Symbol results.
    let small = SandboxLimits {
        max_output_bytes: 1000,
        ..limits()
    };
    assert_eq!(
        run_with(
            &handler("return 'y'.repeat(5000);"),
            json!({}),
            sandbox::no_tools(),
            &small
        ),
        Err(SandboxError::OutputTooLarge {
            bytes: 5002,
            limit: 1000
        })
    );
    let got = run(&handler("const a = {}; a.self = a; return a;"));
    assert!(matches!(got, Err(SandboxError::NotJson { .. })), "{got:?}");
    let got = run(&handler("return 10n;"));
    assert!(matches!(got, Err(SandboxError::NotJson { .. })), "{got:?}");
    assert_eq!(
        run(&handler("return Symbol('s');")),
        Err(SandboxError::NotJson {
            reason: "the handler returned a symbol, which has no JSON form".into()
        })
    );
    assert_eq!(run(&handler("return 1 / 0;")), Ok(Value::Null));
    assert_next_run_clean();
}

#[test]
fn the_output_cap_counts_utf8_bytes_not_utf16_units() {
    // 'é' is 1 UTF-16 unit and 2 bytes; an emoji is 2 units and 4 bytes; a CJK character is 1
    // unit and 3 bytes. Each text below is under 1000 units but over 1000 bytes.
    let small = SandboxLimits {
        max_output_bytes: 1000,
        ..limits()
    };
    let run_small = |body: &str| run_with(&handler(body), json!({}), sandbox::no_tools(), &small);
    for (body, bytes) in [
        ("return 'é'.repeat(600);", 1202),
        ("return '😀'.repeat(300);", 1202),
        ("return '字'.repeat(400);", 1202),
        ("return {k: 'é'.repeat(499)};", 1006),
        ("return ['😀'.repeat(100), '😀'.repeat(150)];", 1007),
    ] {
        assert_eq!(
            run_small(body),
            Err(SandboxError::OutputTooLarge { bytes, limit: 1000 }),
            "{body}"
        );
    }
    // Exactly at the cap in bytes passes: 499 × 2 bytes and two quotes.
    assert_eq!(
        run_small("return 'é'.repeat(499);"),
        Ok(json!("é".repeat(499)))
    );
    // Escaped output is counted as sent: a control character is 6 bytes ("\u0001").
    assert_eq!(
        run_small("return '\\u0001'.repeat(200);"),
        Err(SandboxError::OutputTooLarge {
            bytes: 1202,
            limit: 1000
        })
    );
    // A lone surrogate is escaped by JSON.stringify and then refused as JSON, not a panic.
    let lone = run_small("return '\\uD800';");
    assert!(
        matches!(lone, Err(SandboxError::NotJson { .. })),
        "{lone:?}"
    );
    assert_next_run_clean();
}

#[test]
fn errors_in_the_code_are_typed() {
    assert!(matches!(
        run("function toolHandler( {"),
        Err(SandboxError::Syntax { .. })
    ));
    assert_eq!(run("const x = 1;"), Err(SandboxError::MissingHandler));
    assert_eq!(
        run("var toolHandler = 3;"),
        Err(SandboxError::MissingHandler)
    );
    assert_eq!(
        run(&handler("throw new TypeError('bad input');")),
        Err(SandboxError::Thrown {
            message: "TypeError: bad input".into()
        })
    );
    assert_eq!(
        run(&async_handler("throw 'plain';")),
        Err(SandboxError::Thrown {
            message: "thrown value: plain".into()
        })
    );
}

#[test]
fn console_output_is_capped() {
    let small = SandboxLimits {
        max_log_bytes: 100,
        ..limits()
    };
    let r = rt()
        .block_on(sandbox::run(
            &handler("for (let i = 0; i < 1000; i++) console.log('line', i, {i}); return 1;"),
            &json!({}),
            sandbox::no_tools(),
            &small,
        ))
        .unwrap();
    assert!(r.logs_truncated);
    assert_eq!(r.logs.first().map(String::as_str), Some("line 0 {\"i\":0}"));
    assert!(r.logs.iter().map(String::len).sum::<usize>() <= 100);
}

fn recording_bridge(seen: Arc<std::sync::Mutex<Vec<(String, Value)>>>) -> ToolBridge {
    Arc::new(move |name, args| {
        seen.lock().unwrap().push((name.clone(), args.clone()));
        Box::pin(async move {
            match name.as_str() {
                "echo" => Ok(json!({"echo": args})),
                _ => Err(format!("tool \"{name}\" failed: refused by policy")),
            }
        })
    })
}

#[test]
fn nested_calls_cross_as_json_once() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let bridge = recording_bridge(Arc::clone(&seen));
    // 18: a proxy whose second read differs; the host parses one JSON text.
    let code = handler(
        "let reads = 0;
         const args = new Proxy({}, { get: (t, k) => k === 'path' ? (reads++ === 0 ? 'ok.txt' : '/etc/passwd') : undefined,
                                      ownKeys: () => ['path'], getOwnPropertyDescriptor: () => ({enumerable: true, configurable: true}) });
         const r = tools.call('echo', args);
         return [r, reads];",
    );
    let out = run_with(&code, json!({}), bridge.clone(), &limits()).unwrap();
    assert_eq!(out, json!([{"echo": {"path": "ok.txt"}}, 1]));
    // 12: a patched toJSON changes what the guest sends; the host sees (and gates) exactly that.
    let code = handler(
        "Object.prototype.toJSON = function () { return {path: '/etc/passwd'} }; return tools.call('echo', {path: 'a'});",
    );
    let out = run_with(&code, json!({}), bridge.clone(), &limits()).unwrap();
    // the patched toJSON also shapes the guest's own result: it is guest data either way
    assert_eq!(out, json!({"path": "/etc/passwd"}));
    assert_eq!(
        seen.lock().unwrap()[1],
        ("echo".to_string(), json!({"path": "/etc/passwd"}))
    );
    // 21: a host failure arrives as a plain Error with a string message.
    let code = handler(
        "try { tools.call('shell', {cmd: 'rm -rf ~'}); return 'ran'; }
         catch (e) { return [Object.getPrototypeOf(e) === Error.prototype, typeof e.message, e.message]; }",
    );
    let out = run_with(&code, json!({}), bridge.clone(), &limits()).unwrap();
    assert_eq!(
        out,
        json!([true, "string", "tool \"shell\" failed: refused by policy"])
    );
    // bad arguments never reach the host
    let before = seen.lock().unwrap().len();
    let got = run_with(
        &handler("return tools.call('echo', 5);"),
        json!({}),
        bridge,
        &limits(),
    );
    assert_eq!(
        got,
        Err(SandboxError::Thrown {
            message: "Error: tools.call: arguments must be a JSON object".into()
        })
    );
    assert_eq!(seen.lock().unwrap().len(), before);
}

#[test]
fn nested_calls_have_a_quota() {
    // 17: ten thousand calls; only the quota reaches the host.
    let count = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&count);
    let bridge: ToolBridge = Arc::new(move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(json!(1)) })
    });
    let code = async_handler(
        "return await Promise.all(Array.from({length: 10000}, () => tools.call('read_file', {path: 'a'})));",
    );
    let small = SandboxLimits {
        max_tool_calls: 8,
        ..limits()
    };
    assert_eq!(
        run_with(&code, json!({}), bridge, &small),
        Err(SandboxError::Thrown {
            message: "Error: tool call quota exceeded: at most 8 calls per run".into()
        })
    );
    assert_eq!(count.load(Ordering::SeqCst), 8);
}

#[test]
fn a_host_call_that_hangs_hits_the_backstop() {
    // 3 (host side): the guest is parked in a host call; the wall clock ends the run.
    let bridge: ToolBridge = Arc::new(|_, _| Box::pin(futures::future::pending()));
    let tight = SandboxLimits {
        wall_clock: Duration::from_millis(200),
        tool_call_timeout: Duration::from_secs(60),
        ..limits()
    };
    assert_eq!(
        run_with(
            &handler("return tools.call('slow', {});"),
            json!({}),
            bridge,
            &tight
        ),
        Err(SandboxError::WallClock { limit_ms: 200 })
    );
    assert_next_run_clean();
}

#[test]
fn time_blocked_in_host_calls_is_not_cpu_time() {
    let bridge: ToolBridge = Arc::new(|_, _| {
        Box::pin(async {
            tokio::task::yield_now().await;
            Ok(json!(1))
        })
    });
    let r = rt()
        .block_on(sandbox::run(
            &handler(
                "let n = 0; for (let i = 0; i < 5; i++) n += tools.call('one', {}); return n;",
            ),
            &json!({}),
            bridge,
            &limits(),
        ))
        .unwrap();
    assert_eq!((r.output, r.tool_calls), (json!(5), 5));
}
