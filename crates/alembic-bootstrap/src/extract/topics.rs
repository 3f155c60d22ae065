//! Line signals of the topic dimensions: data and event flow, UI interaction, security and
//! authentication, performance. Each signal is a measured count of matching lines; nothing
//! is reported below its `min_hits`.

use super::Signal;

const DATA_EVENT_FLOW: &[Signal] = &[
    Signal {
        title: "Data flow: notification centre and event bus messages",
        what: "NotificationCenter posts/observers or event-bus emits",
        languages: &[],
        pattern: r"NotificationCenter\.default\.(post|addObserver|publisher)|\bEventEmitter\b|\.emit\(\s*['\x22]|\bEventBus\b",
        min_hits: 1,
    },
    Signal {
        title: "Data flow: reactive streams (Combine, Rx, Flow)",
        what: "Combine publishers, Rx observables or Kotlin flows",
        languages: &[],
        pattern: r"\b(AnyPublisher|PassthroughSubject|CurrentValueSubject|@Published|Observable<|BehaviorSubject|StateFlow|SharedFlow|MutableStateFlow)\b",
        min_hits: 1,
    },
    Signal {
        title: "Data flow: channels between tasks",
        what: "channel construction (mpsc/broadcast/watch, Go chan, asyncio.Queue)",
        languages: &[],
        pattern: r"\b(mpsc|broadcast|watch|oneshot)::(channel|unbounded_channel)\b|\bmake\(chan\b|asyncio\.Queue\(|\bcrossbeam_channel\b",
        min_hits: 1,
    },
    Signal {
        title: "Data flow: streams of values",
        what: "Stream / AsyncSequence / async iterator types",
        languages: &[],
        pattern: r"\bimpl\s+Stream\b|\bStream<|\bAsyncStream\b|\bAsyncSequence\b|\basync\s+function\s*\*|\bfor\s+await\b",
        min_hits: 1,
    },
];

const UI_INTERACTION: &[Signal] = &[
    Signal {
        title: "UI: SwiftUI views",
        what: "types conforming to SwiftUI `View`",
        languages: &["swift"],
        pattern: r"^\s*(public\s+)?(struct|final\s+class|class)\s+\w+\s*:\s*(some\s+)?View\b",
        min_hits: 1,
    },
    Signal {
        title: "UI: UIKit view controllers",
        what: "UIViewController / UIView subclasses",
        languages: &["swift", "objectivec"],
        pattern: r"(class\s+\w+\s*:\s*UI(View|TableView|CollectionView|Navigation)?Controller\b|class\s+\w+\s*:\s*UIView\b|@interface\s+\w+\s*:\s*UI(View|ViewController)\b)",
        min_hits: 1,
    },
    Signal {
        title: "UI: React function components",
        what: "function components returning JSX",
        languages: &["typescript", "javascript"],
        pattern: r"^\s*(export\s+(default\s+)?)?(function\s+[A-Z]\w*\s*\(|const\s+[A-Z]\w*\s*(:\s*React\.FC[^=]*)?=\s*\([^)]*\)\s*=>)|return\s*\(?\s*<[A-Za-z]",
        min_hits: 2,
    },
    Signal {
        title: "UI: event handlers on controls",
        what: "onClick/onChange/onTapGesture/addTarget handlers",
        languages: &[],
        pattern: r"\bon(Click|Change|Submit|TapGesture|Press)\b|addTarget\(|@IBAction\b",
        min_hits: 1,
    },
];

const SECURITY_AUTH: &[Signal] = &[
    Signal {
        title: "Security: authentication tokens and sessions",
        what: "bearer/access/refresh token or session handling",
        languages: &[],
        // Matched on code (literals blanked): the header name or a token identifier, not
        // the text of a header value.
        pattern: r"(?i)\b(bearer_?auth|bearer\b|access_?token|refresh_?token|authorization\b|jwt\b|oauth)",
        min_hits: 1,
    },
    Signal {
        title: "Security: keychain and secure storage",
        what: "Keychain / SecItem / secure-storage calls",
        languages: &[],
        pattern: r"\bSecItem(Add|CopyMatching|Update|Delete)\b|\bKeychain\w*\b|\bEncryptedSharedPreferences\b|\bkeyring\.",
        min_hits: 1,
    },
    Signal {
        title: "Security: cryptography and hashing",
        what: "hashing, HMAC or cipher uses",
        languages: &[],
        pattern: r"\b(Sha256|Sha512|sha256|sha512|Hmac|HMAC|CryptoKit|CommonCrypto|hashlib\.|bcrypt|argon2|AES|Cipher)\b",
        min_hits: 1,
    },
    Signal {
        title: "Security: unsafe Rust",
        what: "`unsafe` blocks, functions or impls",
        languages: &["rust"],
        pattern: r"\bunsafe\s*(\{|fn\b|impl\b)",
        min_hits: 1,
    },
];

const PERFORMANCE: &[Signal] = &[
    Signal {
        title: "Performance: caches",
        what: "cache types and memoisation",
        languages: &[],
        pattern: r"\b\w*Cache\b\s*[<({:=]|\bNSCache\b|@(functools\.)?(lru_)?cache\b|\bLruCache\b|\buseMemo\(",
        min_hits: 1,
    },
    Signal {
        title: "Performance: lazy initialisation",
        what: "lazy values (lazy var, OnceLock/LazyLock, lazy())",
        languages: &[],
        pattern: r"\blazy\s+var\b|\b(OnceLock|LazyLock|OnceCell|Lazy)\b|\bby\s+lazy\b|React\.lazy\(",
        min_hits: 1,
    },
    Signal {
        title: "Performance: pools and reuse",
        what: "connection/thread/object pools and cell reuse",
        languages: &[],
        pattern: r"\b\w*Pool\b\s*[<({:=]|\bThreadPoolExecutor\b|dequeueReusable\w*\(|\bsync\.Pool\b",
        min_hits: 1,
    },
    Signal {
        title: "Performance: batching and parallel iteration",
        what: "batched or chunked work and parallel iterators",
        languages: &[],
        pattern: r"\.(chunks|par_iter|par_chunks|batch)\(|\bbatch_size\b|\bbatchSize\b|\bDispatchQueue\.concurrentPerform\b",
        min_hits: 1,
    },
];

/// Evidence of the detected framework's idioms.
const REACT: &[Signal] = &[
    Signal {
        title: "React: state and effect hooks",
        what: "useState/useEffect/useReducer/useContext calls",
        languages: &["typescript", "javascript"],
        pattern: r"\buse(State|Effect|Reducer|Context|Callback|Ref)\(",
        min_hits: 1,
    },
    Signal {
        title: "React: custom hooks",
        what: "functions named use<Name>",
        languages: &["typescript", "javascript"],
        pattern: r"^\s*(export\s+)?(function\s+use[A-Z]\w*\s*\(|const\s+use[A-Z]\w*\s*=)",
        min_hits: 1,
    },
];

const VUE: &[Signal] = &[Signal {
    title: "Vue: composition API",
    what: "defineComponent/ref/computed/setup uses",
    languages: &["typescript", "javascript"],
    pattern: r"\b(defineComponent|defineProps|ref|reactive|computed)\(|\bsetup\s*\(",
    min_hits: 1,
}];

const SPRING: &[Signal] = &[Signal {
    title: "Spring: stereotype annotations and injection",
    what: "@RestController/@Service/@Repository/@Autowired annotations",
    languages: &["java", "kotlin"],
    pattern: r"@(RestController|Controller|Service|Repository|Component|Autowired|Configuration|Bean)\b",
    min_hits: 1,
}];

const SWIFTUI: &[Signal] = &[Signal {
    title: "SwiftUI: state property wrappers",
    what: "@State/@Binding/@StateObject/@ObservedObject/@EnvironmentObject properties",
    languages: &["swift"],
    pattern: r"@(State|Binding|StateObject|ObservedObject|EnvironmentObject|Environment|Observable)\b",
    min_hits: 1,
}];

const DJANGO_FASTAPI: &[Signal] = &[
    Signal {
        title: "FastAPI: route decorators",
        what: "@app/@router HTTP route decorators",
        languages: &["python"],
        pattern: r"^\s*@(app|router)\.(get|post|put|patch|delete)\(",
        min_hits: 1,
    },
    Signal {
        title: "Django: models and views",
        what: "models.Model subclasses and class-based views",
        languages: &["python"],
        pattern: r"class\s+\w+\((models\.Model|View|APIView|ModelViewSet|\w*View)\)",
        min_hits: 1,
    },
];

/// The signal table of a topic or framework dimension.
pub fn signals_for(dimension: &str) -> Option<&'static [Signal]> {
    Some(match dimension {
        "data-event-flow" => DATA_EVENT_FLOW,
        "ui-interaction" => UI_INTERACTION,
        "security-auth" => SECURITY_AUTH,
        "performance-optimization" => PERFORMANCE,
        "react-patterns" => REACT,
        "vue-patterns" => VUE,
        "spring-patterns" => SPRING,
        "swiftui-patterns" => SWIFTUI,
        "django-fastapi" => DJANGO_FASTAPI,
        _ => return None,
    })
}
