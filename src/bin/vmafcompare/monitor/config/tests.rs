//! Tests of the monitor config: every key and its precedence, and each error line.
use super::*;

/// The error lines of `text` as `m.toml`.
fn errors(text: &str) -> Vec<String> {
    parse(text, "m.toml").err().unwrap_or_default()
}

/// A valid config of one channel `a` with `channel` and `rendition` (`r`) lines added.
fn one(channel: &str, rendition: &str) -> String {
    format!(
        "[[channel]]\nname = \"a\"\nreference = \"srt://x:1\"\n{channel}\n\
         [[channel.rendition]]\nlabel = \"r\"\nuri = \"udp://y:2\"\n{rendition}\n"
    )
}

#[test]
fn full_config_with_precedence() {
    let text = r#"
        [server]
        listen = "0.0.0.0:9100"
        events = "/var/lib/vmafcompare/frames.ndjson"
        stop-timeout = 2.5
        [defaults]
        model = "vmaf_v0.6.1neg"
        features = "psnr"
        backend = "cuda"
        device-id = -1
        threads = 4
        queue-size = 5
        on-full = "block"
        auto-align = true
        align-max-offset = 30
        distorted-delay = 0.1
        window-size = 50
        window-duration = 2
        alert-threshold = 70
        alert-hysteresis = 3
        input-timeout = 3
        stall-timeout = 20
        restart-backoff = 2
        restart-backoff-max = 60
        results-location = "/logs/%c-%s.json"
        [[channel]]
        name = "news"
        reference = "srt://encoder.example:7000"
        backend = "cpu"
        alert-threshold = 60.5
        stall-timeout = 15.0
          [[channel.rendition]]
          label = "1080p"
          uri = "udp://239.1.1.1:5001"
          [[channel.rendition]]
          label = "720p"
          uri = "clips/news 720p#1.ts"
          auto-align = false
          distorted-delay = -0.25
          alert-threshold = 80
          alert-hysteresis = 1.5
        [[channel]]
        name = "sport.hd_2"
        reference = "/srv/sport ref.ts"
          [[channel.rendition]]
          label = "540p"
          uri = "rtsp://cam/540"
    "#;
    let config = parse(text, "m.toml").expect("valid config");
    let server = &config.server;
    assert_eq!(server.listen.to_string(), "0.0.0.0:9100");
    assert_eq!(
        server.events,
        Some("/var/lib/vmafcompare/frames.ndjson".into())
    );
    assert_eq!(server.stop_timeout, Duration::from_millis(2500));
    // sport has the [defaults] (every key), news overrides 3 of them, its 720p 4 more.
    let mut scoring = Scoring {
        model: "vmaf_v0.6.1neg".into(),
        features: "psnr".into(),
        backend: "cuda".into(),
        device_id: -1,
        threads: 4,
        queue_size: 5,
        on_full: "block".into(),
        align_max_offset: 30,
        align_duration_ns: 2_000_000_000,
        window_size: 50,
        window_duration_ns: 2_000_000_000,
        results_location: Some("/logs/%c-%s.json".into()),
    };
    let mut supervision = Supervision {
        input_timeout: Duration::from_secs(3),
        stall_timeout: Duration::from_secs(20),
        restart_backoff: Duration::from_secs(2),
        restart_backoff_max: Duration::from_secs(60),
    };
    let mut rendition = Rendition {
        label: "540p".into(),
        uri: "rtsp://cam/540".into(),
        auto_align: true,
        distorted_delay_ns: 100_000_000,
        alert_threshold: 70.0,
        alert_hysteresis: 3.0,
    };
    let sport = &config.channels[1];
    assert_eq!(sport.name, "sport.hd_2");
    assert_eq!(sport.reference, "file:///srv/sport%20ref.ts");
    assert_eq!(sport.scoring, scoring);
    assert_eq!(sport.supervision, supervision);
    assert_eq!(sport.renditions, [rendition.clone()]);
    let news = &config.channels[0];
    (scoring.backend, supervision.stall_timeout) = ("cpu".into(), Duration::from_secs(15));
    assert_eq!((&news.scoring, &news.supervision), (&scoring, &supervision));
    rendition.alert_threshold = 60.5;
    (rendition.label, rendition.uri) = ("1080p".into(), "udp://239.1.1.1:5001".into());
    assert_eq!(news.renditions[0], rendition);
    let cwd = std::env::current_dir().expect("cwd");
    rendition.uri = format!("file://{}/clips/news%20720p%231.ts", cwd.display());
    (rendition.label, rendition.auto_align) = ("720p".into(), false);
    (rendition.alert_threshold, rendition.alert_hysteresis) = (80.0, 1.5);
    rendition.distorted_delay_ns = -250_000_000;
    assert_eq!(news.renditions[1], rendition);
}

#[test]
fn built_in_defaults() {
    let config = parse(&one("", ""), "m.toml").expect("valid config");
    assert_eq!(config.server.listen.to_string(), "127.0.0.1:9750");
    assert_eq!(config.server, Server::default());
    let channel = &config.channels[0];
    assert_eq!(channel.scoring, Scoring::default());
    assert_eq!(channel.supervision, Supervision::default());
    let r = &channel.renditions[0];
    assert_eq!((r.auto_align, r.distorted_delay_ns), (false, 0));
    assert_eq!((r.alert_threshold, r.alert_hysteresis), (0.0, 5.0));
}

#[test]
fn every_problem_is_one_line() {
    let text = r#"
        [server]
        listen = "localhost"
        [defaults]
        modle = "x"
        [[channel]]
        name = "news"
        reference = "srt://a:1"
          [[channel.rendition]]
          label = "720p"
          urii = "udp://b:2"
          uri = "udp://b:2"
          [[channel.rendition]]
          label = 5
        [[channel]]
        name = "sport"
        reference = "srt://c:1"
        alert-threshold = 140
        backend = "gpu"
          [[channel.rendition]]
          label = "r"
          uri = "udp://d:2"
        [[channel]]
        reference = "srt://e:1"
          [[channel.rendition]]
          label = "r"
          uri = "udp://d:2"
        [[channel]]
        name = "news"
        reference = "srt://f:1"
          [[channel.rendition]]
          label = "r"
          uri = "udp://d:2"
    "#;
    assert_eq!(
        errors(text),
        [
            r#"m.toml: server: "listen" must be ADDRESS:PORT, got "localhost""#,
            r#"m.toml: defaults: unknown key "modle" (did you mean "model"?)"#,
            r#"m.toml: channel "news" (entry 1): rendition "720p": unknown key "urii" (did you mean "uri"?)"#,
            r#"m.toml: channel "news" (entry 1): rendition 2: "label" must be a non-empty name of letters, digits, '-', '_' and '.', got 5"#,
            r#"m.toml: channel "news" (entry 1): rendition 2: missing key "uri""#,
            r#"m.toml: channel "sport" (entry 2): "backend" must be one of auto, cpu, cuda, got "gpu""#,
            r#"m.toml: channel "sport" (entry 2): "alert-threshold" must be a number from 0 to 100, got 140"#,
            r#"m.toml: channel entry 3: missing key "name""#,
            r#"m.toml: channel "news" (entry 4): duplicate channel name (first in entry 1)"#,
        ]
    );
}

#[test]
fn top_level_problems() {
    let text = "model = 1\n[[channels]]\nname = \"a\"\n[server]\nlisten = \"[::1]:80\"\nport = 1\n";
    assert_eq!(
        errors(text),
        [
            r#"m.toml: unknown top-level key "channels" (did you mean "channel"?)"#,
            r#"m.toml: misplaced top-level key "model" (it goes in [[channel]] or [defaults])"#,
            r#"m.toml: server: unknown key "port""#,
            "m.toml: no [[channel]] entries",
        ]
    );
    assert_eq!(
        errors("[channel]\nname = \"a\"\n"),
        [r#"m.toml: "channel" must be an array of tables ([[channel]]), got a table"#,]
    );
    assert_eq!(
        errors("defaults = 3\nchannel = [1, {}]\n"),
        [
            r#"m.toml: "defaults" must be a table ([defaults]), got 3"#,
            r#"m.toml: channel entry 1: must be a table, got 1"#,
            r#"m.toml: channel entry 2: missing key "name""#,
            r#"m.toml: channel entry 2: missing key "reference""#,
            r#"m.toml: channel entry 2: no [[channel.rendition]] entries"#,
        ]
    );
    let lines = errors("[server]\nlisten = \n");
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("m.toml: line 2, column 10: "),
        "{lines:?}"
    );
    let lines = errors("a = 1\n  a = 2\n");
    assert!(
        lines[0].starts_with("m.toml: line 2, column 3: "),
        "{lines:?}"
    );
}

#[test]
fn types_and_ranges() {
    // Integers are taken for numbers, floats are not integers.
    assert!(parse(&one("alert-threshold = 70\nstall-timeout = 3", ""), "m").is_ok());
    let bad = one(
        "queue-size = 3.0\ndevice-id = 64\nauto-align = \"yes\"\nmodel = \"\"\n\
         input-timeout = 0\nwindow-duration = -1.0\nrestart-backoff = 5\n\
         restart-backoff-max = 2\non-full = \"drop\"\nresults-location = []",
        "distorted-delay = 3601\nalert-hysteresis = nan",
    );
    let at = "m.toml: channel \"a\" (entry 1): ";
    let lines: Vec<_> = errors(&bad).iter().map(|l| l.replace(at, "")).collect();
    assert_eq!(
        lines,
        [
            r#""model" must be a non-empty string, got """#,
            r#""device-id" must be an integer from -1 to 63, got 64"#,
            r#""queue-size" must be an integer from 1 to 256, got 3.0"#,
            r#""on-full" must be one of skip, block, got "drop""#,
            r#""auto-align" must be true or false, got "yes""#,
            r#""window-duration" must be a number of seconds from 0 to 86400, got -1.0"#,
            r#""input-timeout" must be a number of seconds, more than 0 and at most 86400, got 0"#,
            r#""results-location" must be a non-empty string, got an array"#,
            r#""restart-backoff-max" (2) must be at least "restart-backoff" (5)"#,
            r#"rendition "r": "distorted-delay" must be a number of seconds from -3600 to 3600, got 3601"#,
            r#"rendition "r": "alert-hysteresis" must be a number from 0 to 100, got NaN"#,
        ]
    );
}

#[test]
fn names_labels_uris_and_logs() {
    let text = r#"
        [defaults]
        restart-backoff = 40
        name = "x"
        results-location = "/l/%s.json"
        [[channel]]
        name = "a b"
        reference = ""
        label = "y"
          [[channel.rendition]]
          label = "reference"
          uri = "udp://a:1"
          model = "m"
          [[channel.rendition]]
          label = "hd"
          uri = "udp://a:2"
          [[channel.rendition]]
          label = "hd"
          uri = 7
        [[channel]]
        name = "b"
        reference = "srt://b:1"
        rendition = { label = "x" }
        [[channel]]
        name = "c"
        reference = "srt://c:1"
        rendition = []
    "#;
    assert_eq!(
        errors(text),
        [
            r#"m.toml: defaults: misplaced key "name" (it goes in [[channel]])"#,
            r#"m.toml: defaults: "restart-backoff-max" (30) must be at least "restart-backoff" (40)"#,
            r#"m.toml: channel entry 1: "name" must be a non-empty name of letters, digits, '-', '_' and '.', got "a b""#,
            r#"m.toml: channel entry 1: misplaced key "label" (it goes in [[channel.rendition]])"#,
            r#"m.toml: channel entry 1: "reference" must be a URI or a file path, got """#,
            r#"m.toml: channel entry 1: rendition 1: "label" must not be "reference" (the reference input's name)"#,
            r#"m.toml: channel entry 1: rendition 1: misplaced key "model" (it goes in [[channel]] or [defaults])"#,
            r#"m.toml: channel entry 1: rendition "hd": duplicate label (renditions 2 and 3)"#,
            r#"m.toml: channel entry 1: rendition "hd": "uri" must be a URI or a file path, got 7"#,
            r#"m.toml: channel "b" (entry 2): "results-location" gives the same files as channel entry 1 (add %c)"#,
            r#"m.toml: channel "b" (entry 2): "rendition" must be an array of tables ([[channel.rendition]]), got a table"#,
            r#"m.toml: channel "c" (entry 3): "results-location" gives the same files as channel entry 1 (add %c)"#,
            r#"m.toml: channel "c" (entry 3): no [[channel.rendition]] entries"#,
        ]
    );
}

#[test]
fn uris_and_paths() {
    assert!(has_scheme("srt://h:1") && has_scheme("file:///a") && has_scheme("a+b.c-d://x"));
    assert!(!has_scheme("/a/b") && !has_scheme("a b://c") && !has_scheme("://c"));
    assert!(!has_scheme("1a://c") && !has_scheme("C:\\a"));
    let uri = file_uri("/srv/a b%c#d?e/é.ts").expect("absolute path");
    assert_eq!(uri, "file:///srv/a%20b%25c%23d%3Fe/%C3%A9.ts");
    assert_eq!(
        (
            distance("modle", "model"),
            distance("", "uri"),
            distance("uri", "uri")
        ),
        (2, 3, 0)
    );
}

#[test]
fn unreadable_file_is_one_line() {
    let lines = load(Path::new("/nonexistent/monitor.toml"))
        .err()
        .unwrap_or_default();
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("/nonexistent/monitor.toml: cannot read: "),
        "{lines:?}"
    );
}

#[test]
fn deploy_example_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/monitor.example.toml");
    if !path.exists() {
        println!("skipped: {} is absent", path.display());
        return;
    }
    if let Err(lines) = load(&path) {
        panic!("{}", lines.join("\n"));
    }
}
