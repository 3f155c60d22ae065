//! Anchors §7.3: file-tool path escapes that Linux can express, each run with
//! both resolution strategies (openat2 and the component walk).

use std::os::unix::fs::MetadataExt;

use alembic_safety::{Access, EntryKind, PathError, PathGuard, PathLimits, Strategy, WriteMode};
use pretty_assertions::assert_eq;

use super::fixture::{Fixture, SECRET};

fn rule<T: std::fmt::Debug>(result: Result<T, PathError>) -> &'static str {
    match result {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(e) => e.rule(),
    }
}

#[test]
fn reads_inside_the_root_work_and_in_root_symlinks_are_followed() {
    let fx = Fixture::new();
    fx.symlink("src/main.rs", "main_link");
    fx.symlink("src", "src_link");
    for (s, guard) in fx.guards() {
        assert_eq!(
            guard.read_to_string("README.md").unwrap(),
            "inside\n",
            "{s:?}"
        );
        assert_eq!(
            guard.read_to_string("./src/../README.md").unwrap(),
            "inside\n"
        );
        assert_eq!(guard.read_to_string("main_link").unwrap(), "fn main() {}\n");
        assert_eq!(
            guard.read_to_string("src_link/main.rs").unwrap(),
            "fn main() {}\n"
        );
        let abs = fx.root.join("src/main.rs");
        assert_eq!(
            guard.check(abs.to_str().unwrap(), Access::Read).unwrap(),
            "src/main.rs"
        );
    }
}

#[test]
fn absolute_symlink_to_root_is_an_escape() {
    let fx = Fixture::new();
    fx.symlink("/", "link_to_root");
    for (s, guard) in fx.guards() {
        assert_eq!(
            rule(guard.read("link_to_root/etc/passwd")),
            "path.escape",
            "{s:?}"
        );
        assert_eq!(rule(guard.read_dir("link_to_root")), "path.escape");
    }
}

#[test]
fn relative_symlink_that_climbs_out_is_an_escape() {
    let fx = Fixture::new();
    fx.symlink("../outside", "up");
    fx.symlink("../outside/secret.txt", "leak");
    for (s, guard) in fx.guards() {
        assert_eq!(rule(guard.read("up/secret.txt")), "path.escape", "{s:?}");
        assert_eq!(rule(guard.read("leak")), "path.escape");
        assert_eq!(rule(guard.metadata("leak")), "path.escape");
        assert_eq!(
            rule(guard.check("up/secret.txt", Access::Read)),
            "path.escape"
        );
    }
}

#[test]
fn writes_never_follow_a_dangling_final_symlink() {
    let fx = Fixture::new();
    fx.symlink(fx.outside.join("created.txt"), "new.txt");
    fx.symlink("../outside/created2.txt", "new2.txt");
    let before = fx.outside_listing();
    for (_, guard) in fx.guards() {
        for name in ["new.txt", "new2.txt"] {
            for mode in [WriteMode::Replace, WriteMode::Append] {
                assert_eq!(
                    rule(guard.write(name, b"pwned", mode)),
                    "path.write_through_symlink"
                );
            }
            assert_eq!(
                rule(guard.check(name, Access::Write)),
                "path.write_through_symlink"
            );
        }
    }
    assert_eq!(fx.outside_listing(), before);
}

#[test]
fn symlink_in_an_intermediate_component_is_refused() {
    let fx = Fixture::new();
    fx.symlink(&fx.outside, "a");
    fx.symlink("src", "inner");
    let before = fx.outside_listing();
    for (s, guard) in fx.guards() {
        assert_eq!(rule(guard.read("a/secret.txt")), "path.escape", "{s:?}");
        assert_eq!(
            rule(guard.write("a/b/c.txt", b"x", WriteMode::Replace)),
            "path.write_through_symlink"
        );
        // Writes refuse even in-root symlinks, so control-path checks see the real object.
        assert_eq!(
            rule(guard.write("inner/x.rs", b"x", WriteMode::Replace)),
            "path.write_through_symlink"
        );
    }
    assert_eq!(fx.outside_listing(), before);
}

#[test]
fn symlink_loops_and_long_chains_fail_fast() {
    let fx = Fixture::new();
    fx.symlink("loop", "loop");
    fx.symlink("ping", "pong");
    fx.symlink("pong", "ping");
    std::fs::write(fx.path("chain_end"), "end").unwrap();
    fx.symlink("chain_end", "chain0");
    for i in 1..=41 {
        fx.symlink(format!("chain{}", i - 1), &format!("chain{i}"));
    }
    for (s, guard) in fx.guards() {
        assert_eq!(rule(guard.read("loop")), "path.symlink_loop", "{s:?}");
        assert_eq!(rule(guard.read("ping/x")), "path.symlink_loop");
        assert_eq!(rule(guard.read("chain41")), "path.symlink_loop");
        assert_eq!(guard.read_to_string("chain30").unwrap(), "end");
    }
}

#[test]
fn writes_through_hard_links_are_refused() {
    let fx = Fixture::new();
    std::fs::hard_link(fx.outside.join("secret.txt"), fx.path("hl")).unwrap();
    for (_, guard) in fx.guards() {
        assert_eq!(
            rule(guard.write("hl", b"pwned", WriteMode::Replace)),
            "path.hard_link"
        );
        assert_eq!(
            rule(guard.write("hl", b"pwned", WriteMode::Append)),
            "path.hard_link"
        );
        assert_eq!(rule(guard.check("hl", Access::Write)), "path.hard_link");
    }
    assert_eq!(
        std::fs::read_to_string(fx.outside.join("secret.txt")).unwrap(),
        SECRET
    );
}

#[test]
fn magic_links_are_escapes() {
    let fx = Fixture::new();
    fx.symlink("/proc/self/root", "proc_root");
    let climb = "../".repeat(40) + "proc/self/root/etc/passwd";
    fx.symlink(&climb, "proc_climb");
    for (s, guard) in fx.guards() {
        for path in [
            "/proc/self/root/etc/passwd",
            "/proc/self/cwd/../x",
            "/dev/fd/3",
            "/proc/self/fd/3",
            "proc_root/etc/passwd",
            "proc_climb",
        ] {
            assert_eq!(rule(guard.read(path)), "path.escape", "{s:?} {path}");
        }
    }
}

#[test]
fn fifo_and_device_links_are_refused_without_blocking() {
    let fx = Fixture::new();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fx.path("fifo").as_path(),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    fx.symlink("/dev/zero", "zero");
    for (s, guard) in fx.guards() {
        assert_eq!(rule(guard.read("fifo")), "path.not_regular", "{s:?}");
        assert_eq!(rule(guard.open_read("fifo")), "path.not_regular");
        assert_eq!(
            rule(guard.write("fifo", b"x", WriteMode::Append)),
            "path.not_regular"
        );
        assert_eq!(rule(guard.read("zero")), "path.escape");
        let entries = guard.read_dir(".").unwrap();
        let fifo = entries.iter().find(|e| e.name == "fifo").unwrap();
        assert_eq!(fifo.kind, EntryKind::Other);
    }
}

#[test]
fn huge_sparse_file_is_refused_before_reading() {
    let fx = Fixture::new();
    let file = std::fs::File::create(fx.path("sparse.img")).unwrap();
    file.set_len(50 * 1024 * 1024 * 1024).unwrap();
    for (_, guard) in fx.guards() {
        assert_eq!(rule(guard.read("sparse.img")), "path.too_large");
    }
    let small = PathGuard::with_limits(
        &fx.root,
        PathLimits {
            max_read_bytes: 4,
            max_write_bytes: 4,
            extra_protected: vec![],
        },
    )
    .unwrap();
    assert_eq!(rule(small.read("README.md")), "path.too_large");
    assert_eq!(
        rule(small.write("big.txt", b"12345", WriteMode::Replace)),
        "path.too_large"
    );
}

#[test]
fn malformed_paths_get_clean_errors() {
    let fx = Fixture::new();
    for (_, guard) in fx.guards() {
        assert_eq!(rule(guard.read("")), "path.empty");
        assert_eq!(rule(guard.read(".")), "path.is_a_directory");
        assert_eq!(rule(guard.read(&"x".repeat(5000))), "path.too_long");
        assert_eq!(rule(guard.read(&"a/".repeat(10_000))), "path.too_long");
        assert_eq!(rule(guard.read("README.md/x")), "path.not_a_directory");
        assert_eq!(
            rule(guard.write(".", b"x", WriteMode::Replace)),
            "path.is_a_directory"
        );
        assert_eq!(
            rule(guard.write("src", b"x", WriteMode::Replace)),
            "path.is_a_directory"
        );
        // Trailing slash on a file: `.`/empty components are dropped, so it names the file.
        assert_eq!(guard.read_to_string("README.md/").unwrap(), "inside\n");
    }
}

#[test]
fn lookalike_and_encoded_names_stay_literal() {
    for strategy in [Strategy::Auto, Strategy::ComponentWalk] {
        let fx = Fixture::new();
        let guard = PathGuard::with_strategy(&fx.root, PathLimits::default(), strategy).unwrap();
        for name in [
            "%2e%2e%2fsecret",
            "%252e%252e%252f",
            "．．／．．／etc/passwd",
            "․․/x",
            "~/.ssh/id_rsa",
            "$HOME/x",
        ] {
            assert_eq!(rule(guard.read(name)), "path.not_found", "{name}");
            let report = guard.write(name, b"literal", WriteMode::Replace).unwrap();
            assert_eq!(report.path, name);
            assert_eq!(std::fs::read_to_string(fx.path(name)).unwrap(), "literal");
        }
    }
}

#[test]
fn root_that_is_a_symlink_or_is_renamed_keeps_its_handle() {
    let fx = Fixture::new();
    let link = fx.outside.join("root_link");
    std::os::unix::fs::symlink(&fx.root, &link).unwrap();
    let via_link = PathGuard::new(&link).unwrap();
    let abs = link.join("README.md");
    assert_eq!(
        via_link.read_to_string(abs.to_str().unwrap()).unwrap(),
        "inside\n"
    );

    let guard = PathGuard::new(&fx.root).unwrap();
    let moved = fx.root.with_file_name("moved_root");
    std::fs::rename(&fx.root, &moved).unwrap();
    std::fs::create_dir(&fx.root).unwrap();
    std::fs::write(fx.root.join("README.md"), "decoy").unwrap();
    assert_eq!(guard.read_to_string("README.md").unwrap(), "inside\n");
}

#[test]
fn moving_an_ancestor_of_a_relative_symlink_cannot_lead_out() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.path("a/b")).unwrap();
    fx.symlink("../../README.md", "a/b/link");
    for (_, guard) in fx.guards() {
        assert_eq!(guard.read_to_string("a/b/link").unwrap(), "inside\n");
    }
    std::fs::rename(fx.path("a/b"), fx.path("b")).unwrap();
    for (_, guard) in fx.guards() {
        assert_eq!(rule(guard.read("b/link")), "path.escape");
    }
}

#[test]
fn escape_errors_do_not_reveal_whether_the_outside_file_exists() {
    let fx = Fixture::new();
    fx.symlink("../outside/secret.txt", "to_existing");
    fx.symlink("../outside/missing.txt", "to_missing");
    for (_, guard) in fx.guards() {
        let existing = guard.read("../outside/secret.txt").unwrap_err().to_string();
        let missing = guard
            .read("../outside/missing.txt")
            .unwrap_err()
            .to_string();
        assert_eq!(
            existing.replace("secret", "X"),
            missing.replace("missing", "X")
        );
        let existing = guard.read("to_existing").unwrap_err().to_string();
        let missing = guard.read("to_missing").unwrap_err().to_string();
        assert_eq!(
            existing.replace("existing", "X"),
            missing.replace("missing", "X")
        );
        assert!(!existing.contains("outside/"), "{existing}");
    }
}

#[test]
fn replace_is_atomic_keeps_mode_and_append_appends() {
    let fx = Fixture::new();
    let guard = PathGuard::new(&fx.root).unwrap();
    let report = guard
        .write("deep/new/file.txt", b"one\n", WriteMode::Replace)
        .unwrap();
    assert!(report.created);
    assert_eq!(report.path, "deep/new/file.txt");
    std::fs::set_permissions(
        fx.path("deep/new/file.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let report = guard
        .write("deep/new/file.txt", b"two\n", WriteMode::Replace)
        .unwrap();
    assert!(!report.created);
    assert_eq!(
        std::fs::metadata(fx.path("deep/new/file.txt"))
            .unwrap()
            .mode()
            & 0o777,
        0o600
    );
    let report = guard
        .write("deep/new/file.txt", b"three\n", WriteMode::Append)
        .unwrap();
    assert_eq!(report.size, 10);
    assert_eq!(
        guard.read_to_string("deep/new/file.txt").unwrap(),
        "two\nthree\n"
    );
    let names: Vec<String> = guard
        .read_dir("deep/new")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        names,
        vec!["file.txt".to_owned()],
        "no temporary files left behind"
    );
}

#[test]
fn check_has_no_side_effects() {
    let fx = Fixture::new();
    let guard = PathGuard::new(&fx.root).unwrap();
    assert_eq!(
        guard.check("x/y/z.txt", Access::Write).unwrap(),
        "x/y/z.txt"
    );
    assert!(!fx.path("x").exists());
    assert_eq!(
        rule(guard.check("x/y/z.txt", Access::Read)),
        "path.not_found"
    );
}

#[test]
fn recursive_remove_stays_inside_and_refuses_control_paths() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.path("tmp/sub/deeper")).unwrap();
    std::fs::write(fx.path("tmp/sub/deeper/f"), "x").unwrap();
    fx.symlink(&fx.outside, "tmp/sub/out");
    std::fs::create_dir_all(fx.path(".git")).unwrap();
    let guard = PathGuard::new(&fx.root).unwrap();
    let before = fx.outside_listing();
    assert_eq!(rule(guard.remove(".git", true)), "path.protected");
    assert_eq!(rule(guard.remove("tmp", false)), "path.is_a_directory");
    let report = guard.remove("tmp", true).unwrap();
    assert_eq!(report.entries_removed, 5);
    assert!(!fx.path("tmp").exists());
    assert_eq!(fx.outside_listing(), before);
}
