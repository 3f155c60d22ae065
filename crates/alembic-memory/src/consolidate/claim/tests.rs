use super::*;
use pretty_assertions::assert_eq;

fn set(words: &[&str]) -> BTreeSet<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn subject_predicate_and_polarity_are_parsed() {
    assert_eq!(
        claims("The Payment module uses the Coordinator + Repository pattern"),
        vec![Claim {
            subject: set(&["payment", "modul"]),
            predicate: set(&["coordin", "repositori", "pattern"]),
            polarity: Polarity::Affirmed,
        }]
    );
    assert_eq!(
        claims("Never use singletons in the Payment module"),
        vec![Claim {
            subject: set(&["payment", "modul"]),
            predicate: set(&["singleton"]),
            polarity: Polarity::Negated,
        }]
    );
}

#[test]
fn an_alternative_denies_the_replaced_object() {
    let c = claims("The API layer uses axum instead of actix-web");
    assert_eq!(c.len(), 2);
    assert_eq!(c[1].predicate, set(&["actix", "web"]));
    assert_eq!(c[1].polarity, Polarity::Negated);
    assert!(contradicts(
        "The API layer uses actix-web",
        "The API layer uses axum instead of actix-web"
    ));
    assert!(contradicts(
        "The build uses Make",
        "The build switched from Make to just"
    ));
}

#[test]
fn contradiction_needs_same_claim_and_opposite_polarity() {
    let cases = [
        (
            "We use tabs for indentation",
            "We do not use tabs for indentation",
            true,
        ),
        (
            "项目使用 CocoaPods 管理依赖",
            "项目不再使用 CocoaPods 管理依赖",
            true,
        ),
        (
            "Use force unwrap in tests",
            "Never use force unwrap in tests",
            true,
        ),
        (
            "Always use anyhow in the CLI",
            "Never use anyhow in the CLI",
            true,
        ),
        (
            "The Payment module uses the Coordinator + Repository pattern",
            "Never use singletons in the Payment module",
            false,
        ),
        // same polarity on both sides is never a contradiction
        (
            "Never use anyhow in the CLI",
            "Never use anyhow in the CLI",
            false,
        ),
        // the reference's loose list flagged these
        (
            "The cleanup job removes stale caches",
            "The build removes stale artifacts",
            false,
        ),
        (
            "Avoid global state in the network layer",
            "The network layer keeps a session cache",
            false,
        ),
        ("Tests use XCTest", "Do not run UI tests on CI", false),
        ("不同模块使用不同的日志级别", "日志级别统一为 info", false),
        // one word in all is no claim to contradict
        ("Redis", "not Redis", false),
    ];
    for (old, new, expected) in cases {
        assert_eq!(contradicts(old, new), expected, "{old:?} vs {new:?}");
        assert_eq!(contradicts(new, old), expected, "{new:?} vs {old:?}");
    }
}

#[test]
fn negation_cues_are_words_not_substrings() {
    let polarity = |t: &str| claims(t)[0].polarity;
    assert_eq!(polarity("We do not squash merges"), Polarity::Negated);
    assert_eq!(polarity("禁止在主线程做网络请求"), Polarity::Negated);
    assert_eq!(
        polarity("The frontend stopped using Redux"),
        Polarity::Negated
    );
    assert_eq!(
        polarity("The notifier sends nothing on weekends"),
        Polarity::Affirmed
    );
    assert_eq!(polarity("The job removes stale caches"), Polarity::Affirmed);
}

#[test]
fn a_relation_keeps_its_direction() {
    assert!(!contradicts(
        "The Billing module depends on the Ledger module",
        "The Ledger module does not depend on the Billing module"
    ));
    assert!(contradicts(
        "The Billing module depends on the Ledger module",
        "The Billing module no longer depends on the Ledger module"
    ));
    assert!(contradicts(
        "The Payment module uses singletons",
        "Never use singletons in the Payment module"
    ));
}
