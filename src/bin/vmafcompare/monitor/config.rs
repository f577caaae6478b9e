//! `vmafcompare monitor`'s config file (README "Monitoring"): reads the TOML into a [`Config`],
//! checking every key (unknown, misplaced, missing, wrong type, out of range, duplicate names) and
//! resolving built-in default < `[defaults]` < `[[channel]]` < `[[channel.rendition]]`. Every
//! problem is one line naming the file, the entry and the key, and all of them are reported.

use std::collections::HashMap;
use std::fmt::Display;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

/// A checked config: the server settings and the channels in file order (at least one).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub server: Server,
    pub channels: Vec<Channel>,
}

/// `[server]`: where the process serves its metrics and writes its events.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// `listen`: address of /metrics, /healthz and /readyz; default 127.0.0.1:9750.
    pub listen: SocketAddr,
    /// `events`: file every scored frame is appended to as a JSON line; default none.
    pub events: Option<PathBuf>,
    /// `stop-timeout`: how long each channel may drain at SIGTERM/SIGINT, in (0, 86400] s;
    /// default 5 s.
    pub stop_timeout: Duration,
}

/// One `[[channel]]`: a reference and its renditions, each scored against the reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    /// `name`: non-empty, of letters, digits, `-`, `_`, `.`; unique in the file.
    pub name: String,
    /// `reference`: a URI (`scheme://...`) for `uridecodebin3`; a path is made a `file://` URI.
    pub reference: String,
    /// `[[channel.rendition]]` in file order: at least one, labels unique.
    pub renditions: Vec<Rendition>,
    /// The element properties every rendition of the channel shares.
    pub scoring: Scoring,
    /// When inputs count as down and the channel is restarted.
    pub supervision: Supervision,
}

/// One `[[channel.rendition]]`; its last four keys fall back to the channel's, `[defaults]`', then
/// the built-in default.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendition {
    /// `label`: as [`Channel::name`], unique in the channel and not `reference`.
    pub label: String,
    /// `uri`: as [`Channel::reference`].
    pub uri: String,
    /// `auto-align`: measure the offset to the reference at start; default false.
    pub auto_align: bool,
    /// `distorted-delay` in ns, given in s (-3600..=3600): how late the rendition is (negative:
    /// the reference is); default 0.
    pub distorted_delay_ns: i64,
    /// `alert-threshold`: window mean VMAF alert level, 0..=100, 0 = no alerts; default 0.
    pub alert_threshold: f64,
    /// `alert-hysteresis`: the alert clears at threshold + this, 0..=100; default 5.
    pub alert_hysteresis: f64,
}

/// A channel's element properties (the same for each of its renditions).
#[derive(Debug, Clone, PartialEq)]
pub struct Scoring {
    /// `model`: one model or a comma-separated list, non-empty; default `vmaf_v0.6.1`.
    pub model: String,
    /// `features`: extra features, comma-separated; default empty.
    pub features: String,
    /// `backend`: `auto`, `cpu` or `cuda`; default `auto`.
    pub backend: String,
    /// `device-id`: CUDA ordinal 0..=63, or -1: the element picks; default 0.
    pub device_id: i32,
    /// `threads`: CPU backend threads 0..=1024, 0 = one per core; default 0.
    pub threads: u32,
    /// `queue-size`: live scoring queue, 1..=256 frame pairs; default 16 (network streams and decoders deliver frames in bursts: the element's default of 3 skips pairs of a 25 fps UDP stream that a CPU scores 10 times faster).
    pub queue_size: u32,
    /// `on-full`: `skip` or `block`; default `skip`.
    pub on_full: String,
    /// `align-max-offset`: auto-align's search range, 0..=1000 frames; default 15.
    pub align_max_offset: u32,
    /// `align-duration`: seconds of video auto-align compares at each offset, more than 0 and
    /// at most 60; default 2 (the element's is 1: a live network stream's timestamps settle
    /// during its first second, and the delay is taken from the later half of the compared
    /// frames).
    pub align_duration_ns: u64,
    /// `window-size`: the sliding window, 1..=100000 frames; default 25.
    pub window_size: u32,
    /// `window-duration` in ns, given in s (0..=86400): if not 0, a window of running time
    /// instead of frames; default 0.
    pub window_duration_ns: u64,
    /// `results-location`: libvmaf log per rendition, `%c` = channel, `%s` = label; default none.
    pub results_location: Option<String>,
}

/// A channel's supervision timings, each given in s, in (0, 86400].
#[derive(Debug, Clone, PartialEq)]
pub struct Supervision {
    /// `input-timeout`: without a frame this long an input is reported down; default 2 s.
    pub input_timeout: Duration,
    /// `stall-timeout`: without a scored frame this long the channel restarts; default 10 s.
    pub stall_timeout: Duration,
    /// `restart-backoff`: wait before the first restart, doubled at each; default 1 s.
    pub restart_backoff: Duration,
    /// `restart-backoff-max`: the doubling's cap, at least `restart-backoff`; default 30 s.
    pub restart_backoff_max: Duration,
}

impl Default for Server {
    fn default() -> Self {
        let (listen, stop_timeout) = (([127, 0, 0, 1], 9750).into(), Duration::from_secs(5));
        Server {
            listen,
            events: None,
            stop_timeout,
        }
    }
}

impl Default for Scoring {
    fn default() -> Self {
        Scoring {
            model: "vmaf_v0.6.1".into(),
            features: String::new(),
            backend: "auto".into(),
            device_id: 0,
            threads: 0,
            queue_size: 16,
            on_full: "skip".into(),
            align_max_offset: 15,
            align_duration_ns: 2_000_000_000,
            window_size: 25,
            window_duration_ns: 0,
            results_location: None,
        }
    }
}

impl Default for Supervision {
    fn default() -> Self {
        Supervision {
            input_timeout: Duration::from_secs(2),
            stall_timeout: Duration::from_secs(10),
            restart_backoff: Duration::from_secs(1),
            restart_backoff_max: Duration::from_secs(30),
        }
    }
}

/// Reads and checks the config file at `path`.
///
/// Errors: as [`parse`], each line starting with `path` as given (`monitor.toml: ...`); an
/// unreadable file is the one line `PATH: cannot read: ERROR`.
pub fn load(path: &Path) -> Result<Config, Vec<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text, &path.display().to_string()),
        Err(err) => Err(vec![format!("{}: cannot read: {err}", path.display())]),
    }
}

/// Checks the config `text`; `origin` (the file name) starts every error line.
///
/// Errors: a TOML syntax error is the one line `ORIGIN: line L, column C: MESSAGE` (1-based);
/// otherwise every problem, one line each: `ORIGIN: [AT: ]PROBLEM`, AT being `server`,
/// `defaults`, `channel "NAME" (entry N)` or `channel entry N` (N 1-based), then for a
/// rendition's keys `: rendition "LABEL"` or `: rendition M`. PROBLEM is `unknown key "K"`
/// (maybe with ` (did you mean "KEY"?)`), `misplaced key "K" (it goes in SECTION)`,
/// `missing key "K"`, `"K" must be WANT, got VALUE`, or a duplicate or an inconsistency.
pub fn parse(text: &str, origin: &str) -> Result<Config, Vec<String>> {
    let top: Table = match text.parse() {
        Ok(top) => top,
        Err(err) => return Err(vec![syntax_error(text, origin, &err)]),
    };
    let mut e = Errors(origin, Vec::new());
    e.unknown("", &top, TOP_KEYS);

    let table = e.table(&top, "server");
    e.unknown("server", &table, SERVER_KEYS);
    let mut server = Server::default();
    if let Some(v) = table.get("listen") {
        match v.as_str().and_then(|s| s.parse().ok()) {
            Some(addr) => server.listen = addr,
            None => e.push("server", must("listen", "ADDRESS:PORT", v)),
        }
    }
    match table.get("events") {
        Some(Value::String(path)) if !path.is_empty() => server.events = Some(path.into()),
        Some(v) => e.push("server", must("events", "a file path", v)),
        None => {}
    }
    match table.get("stop-timeout") {
        Some(v) if Kind::Secs.check(v) => server.stop_timeout = secs(number(v)),
        Some(v) => e.push("server", must("stop-timeout", &Kind::Secs.want(), v)),
        None => {}
    }

    let table = e.table(&top, "defaults");
    e.unknown("defaults", &table, &[]);
    let mut defaults = Settings::default();
    defaults.apply(&table, "defaults", &mut e);

    let mut channels = Vec::new();
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut logs: HashMap<String, String> = HashMap::new();
    for (n, t) in e.array("", &top, "channel") {
        let name = e.name(&format!("channel entry {n}"), t, "name");
        let at = match &name {
            Some(name) => format!("channel \"{name}\" (entry {n})"),
            None => format!("channel entry {n}"),
        };
        if let Some(first) = name.as_ref().and_then(|name| seen(&mut names, name, n)) {
            let problem = format!("duplicate channel name (first in entry {first})");
            e.push(&at, problem);
        }
        e.unknown(&at, t, CHANNEL_ONLY);
        let reference = e.uri(&at, t, "reference");
        let mut s = defaults.clone();
        s.apply(t, &at, &mut e);
        let name = name.unwrap_or_default();
        let log = s.scoring.results_location.as_deref().unwrap_or("");
        let log = log.replace("%c", &name);
        if let Some(first) = seen(&mut logs, &log, at.clone()).filter(|_| !log.is_empty()) {
            let problem = format!("gives the same files as {first} (add %c)");
            e.push(&at, format!("\"results-location\" {problem}"));
        }
        let renditions = renditions(t, &at, &s, &mut e);
        let (scoring, supervision) = (s.scoring, s.supervision);
        channels.push(Channel {
            name,
            reference,
            renditions,
            scoring,
            supervision,
        });
    }
    if e.1.is_empty() {
        Ok(Config { server, channels })
    } else {
        Err(e.1)
    }
}

/// The checked `[[channel.rendition]]` entries of channel table `t` (named `at`), the four
/// per-rendition keys falling back to the channel's `base`.
fn renditions(t: &Table, at: &str, base: &Settings, e: &mut Errors) -> Vec<Rendition> {
    let mut labels: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (m, r) in e.array(at, t, "rendition") {
        let numbered = format!("{at}: rendition {m}");
        let mut label = e.name(&numbered, r, "label");
        if label.as_deref() == Some("reference") {
            e.push(&numbered, NOT_REFERENCE);
            label = None;
        }
        let here = match &label {
            Some(label) => format!("{at}: rendition \"{label}\""),
            None => numbered,
        };
        if let Some(first) = label.as_ref().and_then(|label| seen(&mut labels, label, m)) {
            let problem = format!("duplicate label (renditions {first} and {m})");
            e.push(&here, problem);
        }
        e.unknown(&here, r, RENDITION_ONLY);
        let uri = e.uri(&here, r, "uri");
        let mut s = base.clone();
        s.apply(r, &here, e);
        (s.rendition.label, s.rendition.uri) = (label.unwrap_or_default(), uri);
        out.push(s.rendition);
    }
    out
}

/// What a key's value must be.
enum Kind {
    /// A string; `true`: it may be empty.
    Str(bool),
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// An integer in `lo..=hi`.
    Int(i64, i64),
    Bool,
    /// A number (an integer is taken) in `lo..=hi`; the text is its unit (` of seconds`).
    Num(f64, f64, &'static str),
    /// A number of seconds, more than 0 and at most 86400: a duration far from overflow.
    Secs,
}

impl Kind {
    /// Whether `v` has the type and is in range.
    fn check(&self, v: &Value) -> bool {
        let x = number(v);
        match (self, v) {
            (Kind::Str(empty_ok), Value::String(s)) => *empty_ok || !s.is_empty(),
            (Kind::OneOf(choices), Value::String(s)) => choices.contains(&s.as_str()),
            (Kind::Int(lo, hi), Value::Integer(n)) => (lo..=hi).contains(&n),
            (Kind::Bool, Value::Boolean(_)) => true,
            (Kind::Num(lo, hi, _), Value::Integer(_) | Value::Float(_)) => *lo <= x && x <= *hi,
            (Kind::Secs, Value::Integer(_) | Value::Float(_)) => 0.0 < x && x <= 86_400.0,
            _ => false,
        }
    }

    /// The WANT of `"KEY" must be WANT, got VALUE`.
    fn want(&self) -> String {
        match self {
            Kind::Str(true) => "a string".into(),
            Kind::Str(false) => "a non-empty string".into(),
            Kind::OneOf(choices) => format!("one of {}", choices.join(", ")),
            Kind::Int(lo, hi) => format!("an integer from {lo} to {hi}"),
            Kind::Bool => "true or false".into(),
            Kind::Num(lo, hi, unit) => format!("a number{unit} from {lo} to {hi}"),
            Kind::Secs => "a number of seconds, more than 0 and at most 86400".into(),
        }
    }
}

const SCORE: Kind = Kind::Num(0.0, 100.0, "");
const SECONDS: &str = " of seconds";

/// The channel-level keys (valid in `[defaults]` and `[[channel]]`), in checking order; `true`:
/// valid in `[[channel.rendition]]` too.
const CHANNEL_KEYS: &[(&str, Kind, bool)] = &[
    ("model", Kind::Str(false), false),
    ("features", Kind::Str(true), false),
    ("backend", Kind::OneOf(&["auto", "cpu", "cuda"]), false),
    ("device-id", Kind::Int(-1, 63), false),
    ("threads", Kind::Int(0, 1024), false),
    ("queue-size", Kind::Int(1, 256), false),
    ("on-full", Kind::OneOf(&["skip", "block"]), false),
    ("auto-align", Kind::Bool, true),
    ("align-max-offset", Kind::Int(0, 1000), false),
    ("align-duration", Kind::Num(0.04, 60.0, SECONDS), false),
    ("distorted-delay", Kind::Num(-3600.0, 3600.0, SECONDS), true),
    ("window-size", Kind::Int(1, 100_000), false),
    ("window-duration", Kind::Num(0.0, 86_400.0, SECONDS), false),
    ("alert-threshold", SCORE, true),
    ("alert-hysteresis", SCORE, true),
    ("input-timeout", Kind::Secs, false),
    ("stall-timeout", Kind::Secs, false),
    ("restart-backoff", Kind::Secs, false),
    ("restart-backoff-max", Kind::Secs, false),
    ("results-location", Kind::Str(false), false),
];
const TOP_KEYS: &[&str] = &["server", "defaults", "channel"];
const SERVER_KEYS: &[&str] = &["listen", "events", "stop-timeout"];
/// `[[channel]]`'s keys besides [`CHANNEL_KEYS`].
const CHANNEL_ONLY: &[&str] = &["name", "reference", "rendition"];
/// `[[channel.rendition]]`'s keys besides its [`CHANNEL_KEYS`].
const RENDITION_ONLY: &[&str] = &["label", "uri"];
/// Where a key out of place goes (a channel-level key: `[[channel]] or [defaults]`).
const HOMES: &[(&[&str], &str)] = &[
    (TOP_KEYS, "the top level"),
    (SERVER_KEYS, "[server]"),
    (CHANNEL_ONLY, "[[channel]]"),
    (RENDITION_ONLY, "[[channel.rendition]]"),
];

/// The channel-level keys resolved at one level of precedence (`rendition`: its last 4 fields).
#[derive(Clone)]
struct Settings {
    scoring: Scoring,
    supervision: Supervision,
    rendition: Rendition,
}

impl Default for Settings {
    fn default() -> Self {
        let rendition = Rendition {
            label: String::new(),
            uri: String::new(),
            auto_align: false,
            distorted_delay_ns: 0,
            alert_threshold: 0.0,
            alert_hysteresis: 5.0,
        };
        Settings {
            scoring: Scoring::default(),
            supervision: Supervision::default(),
            rendition,
        }
    }
}

impl Settings {
    /// Overrides with the channel-level keys table `t` (named `at`) has, only the per-rendition
    /// ones when `at` names a rendition; a bad value is an error line and leaves its setting as
    /// it was. Then checks the backoffs when `t` sets either.
    fn apply(&mut self, t: &Table, at: &str, e: &mut Errors) {
        let rendition = at.contains(": rendition ");
        for (key, kind, _) in CHANNEL_KEYS.iter().filter(|k| k.2 || !rendition) {
            match t.get(*key) {
                Some(v) if kind.check(v) => self.set(key, v),
                Some(v) => e.push(at, must(key, &kind.want(), v)),
                None => {}
            }
        }
        let first = self.supervision.restart_backoff.as_secs_f64();
        let max = self.supervision.restart_backoff_max.as_secs_f64();
        let here = t.contains_key("restart-backoff") || t.contains_key("restart-backoff-max");
        if max < first && here {
            let problem = format!("must be at least \"restart-backoff\" ({first})");
            e.push(at, format!("\"restart-backoff-max\" ({max}) {problem}"));
        }
    }

    /// Stores `v`, which [`Kind::check`] passed for `key` (its ranges make the casts exact).
    fn set(&mut self, key: &str, v: &Value) {
        let s = || v.as_str().unwrap_or_default().to_string();
        let (n, x) = (v.as_integer().unwrap_or_default(), number(v));
        let (sc, su) = (&mut self.scoring, &mut self.supervision);
        let r = &mut self.rendition;
        match key {
            "model" => sc.model = s(),
            "features" => sc.features = s(),
            "backend" => sc.backend = s(),
            "device-id" => sc.device_id = n as i32,
            "threads" => sc.threads = n as u32,
            "queue-size" => sc.queue_size = n as u32,
            "on-full" => sc.on_full = s(),
            "auto-align" => r.auto_align = v.as_bool().unwrap_or_default(),
            "align-max-offset" => sc.align_max_offset = n as u32,
            "align-duration" => sc.align_duration_ns = (x * 1e9).round() as u64,
            "distorted-delay" => r.distorted_delay_ns = (x * 1e9).round() as i64,
            "window-size" => sc.window_size = n as u32,
            "window-duration" => sc.window_duration_ns = (x * 1e9).round() as u64,
            "alert-threshold" => r.alert_threshold = x,
            "alert-hysteresis" => r.alert_hysteresis = x,
            "input-timeout" => su.input_timeout = secs(x),
            "stall-timeout" => su.stall_timeout = secs(x),
            "restart-backoff" => su.restart_backoff = secs(x),
            "restart-backoff-max" => su.restart_backoff_max = secs(x),
            "results-location" => sc.results_location = Some(s()),
            _ => {}
        }
    }
}

/// An integer or float value as f64 (0 for other types).
fn number(v: &Value) -> f64 {
    let int = v.as_integer().map(|n| n as f64);
    v.as_float().or(int).unwrap_or_default()
}

/// A checked number of seconds as a [`Duration`] (saturating; the checks keep it in range).
fn secs(x: f64) -> Duration {
    Duration::try_from_secs_f64(x).unwrap_or(Duration::MAX)
}

/// `"KEY" must be WANT, got VALUE`.
fn must(key: &str, want: &str, v: &Value) -> String {
    format!("\"{key}\" must be {want}, got {}", shown(v))
}

/// A value as error lines show it: strings quoted, floats with their point, no array contents.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{}\"", s.escape_debug()),
        Value::Float(x) => format!("{x:?}"),
        Value::Array(_) => "an array".into(),
        Value::Table(_) => "a table".into(),
        v => v.to_string(),
    }
}

/// The TOML syntax error as `ORIGIN: line L, column C: MESSAGE`, on one line.
fn syntax_error(text: &str, origin: &str, err: &toml::de::Error) -> String {
    let message = err.message().trim().lines().collect::<Vec<_>>().join("; ");
    let Some(start) = err.span().map(|span| span.start) else {
        return format!("{origin}: {message}");
    };
    let before = text.get(..start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    format!("{origin}: line {line}, column {column}: {message}")
}

/// A file path as a `file://` URI: made absolute (from the working directory), every byte
/// percent-escaped but unreserved ones and `/!$&'()*+,;=:@` (as `g_filename_to_uri`).
fn file_uri(path: &str) -> Result<String, std::io::Error> {
    let mut path = std::path::absolute(path)?.to_string_lossy().into_owned();
    if cfg!(windows) {
        path = format!("/{}", path.replace('\\', "/"));
    }
    let mut uri = String::from("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(uri)
}

/// Whether `s` starts with `scheme://` (RFC 3986: a letter, then letters, digits, `+-.`).
fn has_scheme(s: &str) -> bool {
    let scheme = s.split_once("://").map_or("", |(scheme, _)| scheme);
    let char_ok = |c: char| c.is_ascii_alphanumeric() || "+-.".contains(c);
    scheme.starts_with(|c: char| c.is_ascii_alphabetic()) && scheme.chars().all(char_ok)
}

/// Levenshtein distance, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = std::mem::replace(&mut row[0], i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitute = diag + usize::from(ca != *cb);
            let next = substitute.min(row[j] + 1).min(row[j + 1] + 1);
            diag = std::mem::replace(&mut row[j + 1], next);
        }
    }
    row[b.len()]
}

const NAME: &str = "a non-empty name of letters, digits, '-', '_' and '.'";
const NOT_REFERENCE: &str = "\"label\" must not be \"reference\" (the reference input's name)";

/// Records `value` under `key` unless some value is there already: returns that one.
fn seen<V: Clone>(map: &mut HashMap<String, V>, key: &str, value: V) -> Option<V> {
    match map.get(key) {
        Some(first) => Some(first.clone()),
        None => map.insert(key.to_string(), value),
    }
}

/// The file name and the error lines so far, each `ORIGIN: [AT: ]PROBLEM`.
struct Errors<'a>(&'a str, Vec<String>);

impl Errors<'_> {
    fn push(&mut self, at: &str, problem: impl Display) {
        let sep = if at.is_empty() { "" } else { ": " };
        self.1.push(format!("{}: {at}{sep}{problem}", self.0));
    }

    /// Top-level `key` as a table (`[key]`); empty if absent or after an error.
    fn table(&mut self, top: &Table, key: &str) -> Table {
        match top.get(key) {
            Some(Value::Table(t)) => return t.clone(),
            Some(v) => self.push("", must(key, &format!("a table ([{key}])"), v)),
            None => {}
        }
        Table::new()
    }

    /// `key` of `t` (named `at`; the top level when empty) as an array of tables, `[[channel]]`
    /// or `[[channel.rendition]]`: the entries that are tables with their 1-based numbers, after
    /// an error for the others.
    fn array<'t>(&mut self, at: &str, t: &'t Table, key: &str) -> Vec<(usize, &'t Table)> {
        let (section, entry) = match at {
            "" => ("channel".to_string(), "channel entry".to_string()),
            _ => ("channel.rendition".into(), format!("{at}: rendition")),
        };
        let entries = match t.get(key) {
            Some(Value::Array(a)) => a.as_slice(),
            Some(v) => {
                let want = format!("an array of tables ([[{section}]])");
                self.push(at, must(key, &want, v));
                return Vec::new();
            }
            None => &[],
        };
        if entries.is_empty() {
            self.push(at, format!("no [[{section}]] entries"));
        }
        let mut tables = Vec::new();
        for (n, v) in entries.iter().enumerate().map(|(i, v)| (i + 1, v)) {
            match v {
                Value::Table(t) => tables.push((n, t)),
                v => {
                    let problem = format!("must be a table, got {}", shown(v));
                    self.push(&format!("{entry} {n}"), problem);
                }
            }
        }
        tables
    }

    /// Reports, sorted, the keys of `t` (named `at`) that are neither in `extra` nor, below the
    /// top and `[server]`, channel-level keys (only per-rendition ones in a rendition).
    fn unknown(&mut self, at: &str, t: &Table, extra: &[&str]) {
        let (top, rendition) = (at.is_empty(), at.contains(": rendition "));
        let mut known = extra.to_vec();
        if !top && at != "server" {
            let keys = CHANNEL_KEYS.iter().filter(|k| k.2 || !rendition);
            known.extend(keys.map(|k| k.0));
        }
        let mut bad: Vec<&str> = t.keys().map(String::as_str).collect();
        bad.retain(|k| !known.contains(k));
        bad.sort_unstable();
        let what = if top { "top-level key" } else { "key" };
        for key in bad {
            let home = HOMES.iter().find(|h| h.0.contains(&key)).map(|h| h.1);
            let channel_key = CHANNEL_KEYS.iter().any(|k| k.0 == key);
            let home = home.or(channel_key.then_some("[[channel]] or [defaults]"));
            let near = |k: &&&str| distance(key, k) <= 2 && distance(key, k) < key.len();
            let guess = known.iter().filter(near).min_by_key(|k| distance(key, k));
            let problem = match (home, guess) {
                (Some(home), _) => format!("misplaced {what} \"{key}\" (it goes in {home})"),
                (None, Some(k)) => format!("unknown {what} \"{key}\" (did you mean \"{k}\"?)"),
                (None, None) => format!("unknown {what} \"{key}\""),
            };
            self.push(at, problem);
        }
    }

    /// The required `key` of `t` as a name (letters, digits, `-_.`), or `None` after an error.
    fn name(&mut self, at: &str, t: &Table, key: &str) -> Option<String> {
        let char_ok = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        match t.get(key) {
            Some(Value::String(s)) if !s.is_empty() && s.chars().all(char_ok) => {
                return Some(s.clone())
            }
            Some(v) => self.push(at, must(key, NAME, v)),
            None => self.push(at, format!("missing key \"{key}\"")),
        }
        None
    }

    /// The required `key` of `t` as a URI: kept when it has a scheme, else a path made a
    /// `file://` URI; empty after an error.
    fn uri(&mut self, at: &str, t: &Table, key: &str) -> String {
        let Some(v) = t.get(key) else {
            self.push(at, format!("missing key \"{key}\""));
            return String::new();
        };
        let uri = match v.as_str() {
            Some(s) if has_scheme(s) => Ok(s.to_string()),
            Some(s) if !s.is_empty() => file_uri(s).map_err(|err| format!(" ({err})")),
            _ => Err(String::new()),
        };
        uri.unwrap_or_else(|err| {
            self.push(at, format!("{}{err}", must(key, "a URI or a file path", v)));
            String::new()
        })
    }
}

#[cfg(test)]
mod tests;
