#!/usr/bin/env bash
# Checks the deployment files in deploy/ (issue 46, "Deploy") against the tools that consume
# them and against README's "Monitoring" section, the contract they are written to:
#   - the example config and the Kubernetes ConfigMap's config use only README's keys, in the
#     sections README puts them;
#   - the systemd unit: systemd-analyze verify (skipped where systemd-analyze is missing);
#   - Prometheus: promtool check rules / check config, promtool test rules on the rule tests;
#   - the Grafana dashboard: JSON, unique panel ids, no overlapping panels, the datasource,
#     channel and rendition variables, every PromQL expression naming only README's metrics
#     and labels and PromQL's functions;
#   - Kubernetes: kubernetes-validate (pip; the bundled Kubernetes JSON schemas, strict) on the
#     core objects, a structure check of the ServiceMonitor (a CRD the schemas lack), and the
#     cross-references between the objects (labels, ports, ConfigMap, probes, annotations);
#   - the container scripts: bash -n.
#
#   usage: scripts/deploy-check.sh
#
# Needs python3 with PyYAML (installed with kubernetes-validate) and promtool (Debian's
# prometheus package). Prints one line per check, then "deploy: N passed, N failed, N skipped";
# exits non-zero when a check fails. A tool that is missing and cannot be installed skips its
# checks with "SKIP: <reason>".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
py=${PYTHON:-python3}
start=$SECONDS
# shellcheck source=scripts/checks.sh
source scripts/checks.sh
tmp=$(mktemp -d /tmp/vmafcompare-deploy-check.XXXX)
trap 'rm -rf --one-file-system "$tmp"' EXIT

# pip_install PACKAGE: as scripts/setup-debian.sh does (system Python: --break-system-packages).
pip_install() {
  "$py" -m pip install -q --disable-pip-version-check "$@" >"$tmp/pip.log" 2>&1 \
    || "$py" -m pip install -q --disable-pip-version-check --break-system-packages "$@" >>"$tmp/pip.log" 2>&1
}

# kubernetes-validate: Kubernetes' JSON schemas, bundled (no cluster, no network at check time).
# Pinned; it brings PyYAML, which the checks below use too.
kv_version=1.37.0
if ! "$py" -c "import kubernetes_validate" 2>/dev/null; then
  echo "installing kubernetes-validate $kv_version (pip)"
  pip_install "kubernetes-validate==$kv_version" || { echo "  (pip failed: $(tail -1 "$tmp/pip.log"))"; }
fi
have_yaml=0; "$py" -c "import yaml" 2>/dev/null && have_yaml=1

# ---------------------------------------------------------------------------------------------
# README's contract, read once: the config's keys per section and the metric names and labels.
"$py" - README.md >"$tmp/contract.json" <<'EOF' || { echo "cannot read README's Monitoring section" >&2; exit 2; }
import json, re, sys
text = open(sys.argv[1]).read()
mon = text[text.index("\n## Monitoring"):]
mon = mon[:mon.index("\n## ", 1)]
# The config block: [server]'s keys, and the rendition keys its comment lists.
block = re.search(r"### The config\n```toml\n(.*?)```", mon, re.S).group(1)
server = re.search(r"\[server\]\n(.*?)\n\s*\n", block, re.S).group(1)
server_keys = re.findall(r"^([a-z-]+)\s*=", server, re.M)
rend = re.search(r"rendition keys:(.*?)\n(?!\s*#)", block, re.S).group(1)
rendition_keys = re.findall(r"[a-z][a-z-]*", re.sub(r"\n\s*#", " ", rend))
# The key table: first cells of rows after "| key |".
table = mon[mon.index("| key |"):]
channel_keys, defaults = [], {}
for line in table.splitlines()[2:]:
    if not line.startswith("|"):
        break
    keys = re.findall(r"`([a-z-]+)`", line.split("|")[1])
    channel_keys += keys
    # The default column: one value per key, comma-separated ("16, `skip`", "0.0 (off), 5.0").
    vals = [re.sub(r"\(.*?\)|`", "", v).strip() for v in line.split("|")[2].split(",")]
    if len(vals) == len(keys):
        defaults.update(zip(keys, vals))
# The metric table: names (labels in braces after them), types.
metrics, labels = {}, {"channel", "rendition"}
mt = mon[mon.index("| metric |"):]
for line in mt.splitlines()[2:]:
    if not line.startswith("|"):
        break
    cells = line.split("|")
    kind = cells[2].strip()
    for name, lab in re.findall(r"`(vmafcompare_[a-z0-9_]+)(?:\{([a-z_,]+)\})?`", cells[1]):
        metrics[name] = kind
        labels.update(filter(None, (lab or "").split(",")))
series = set()
for name, kind in metrics.items():
    if kind == "histogram":
        series.update(name + s for s in ("_bucket", "_sum", "_count"))
    else:
        series.add(name)
assert server_keys and rendition_keys and len(channel_keys) > 15 and len(metrics) > 15, "README parse"
json.dump({"server": server_keys, "channel": channel_keys, "rendition": rendition_keys, "defaults": defaults,
           "metrics": sorted(metrics), "series": sorted(series), "labels": sorted(labels)}, sys.stdout)
EOF
contract=$tmp/contract.json

# ---------------------------------------------------------------------------------------------
step "config keys: deploy/monitor.example.toml, deploy/kubernetes/configmap.yaml's monitor.toml"
# check_config FILE NAME: every key is one README lists for its section; every channel has a
# name, a reference and renditions with a label and a uri.
check_config() {
  "$py" - "$contract" "$1" "$2" <<'EOF'
import json, sys, tomllib
c = json.load(open(sys.argv[1]))
cfg = tomllib.load(open(sys.argv[2], "rb"))
name = sys.argv[3]
chan = set(c["channel"])
errs = []
def keys(where, table, allowed):
    for k in table:
        if k not in allowed:
            errs.append(f"{where}: key {k!r} is not one README lists")
keys("top level", cfg, {"server", "defaults", "channel"})
keys("[server]", cfg.get("server", {}), set(c["server"]))
keys("[defaults]", cfg.get("defaults", {}), chan)
chans = cfg.get("channel", [])
if not chans:
    errs.append("no [[channel]]")
renditions = 0
for i, ch in enumerate(chans, 1):
    where = f"channel {ch.get('name', i)!r}"
    keys(where, ch, chan | {"name", "reference", "rendition"})
    for need in ("name", "reference", "rendition"):
        if need not in ch:
            errs.append(f"{where}: no {need!r}")
    for r in ch.get("rendition", []):
        renditions += 1
        keys(f"{where} rendition {r.get('label')!r}", r, set(c["rendition"]) | {"label", "uri"})
        for need in ("label", "uri"):
            if need not in r:
                errs.append(f"{where}: a rendition without {need!r}")
for e in errs:
    print(f"    {name}: {e}")
print(f"    {name}: {len(chans)} channels, {renditions} renditions")
sys.exit(1 if errs else 0)
EOF
}
if check_config deploy/monitor.example.toml deploy/monitor.example.toml; then ok "deploy/monitor.example.toml: README's keys only"
else bad "deploy/monitor.example.toml"; fi
# The example's [defaults] shows the built-in defaults as comments ("# key = value"): they must
# be README's (its table's default column), so the example does not go stale.
"$py" - "$contract" deploy/monitor.example.toml <<'EOF' && ok "deploy/monitor.example.toml: its commented defaults are README's" || bad "deploy/monitor.example.toml: commented defaults"
import json, re, sys, tomllib
c = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
section = text[text.index("\n[defaults]"):]
section = section[:section.index("\n[[channel]]")]
errs, n = [], 0
for key, value in re.findall(r"^# ([a-z-]+) = (\S+)", section, re.M):
    want = c["defaults"].get(key)
    if want is None or want == "unset":
        continue
    n += 1
    got = tomllib.loads(f"v = {value}")["v"]
    want_v = "" if want == "empty" else tomllib.loads(f"v = {want}")["v"] if re.fullmatch(r"-?[0-9.]+|true|false", want) else want
    if got != want_v and not (isinstance(got, (int, float)) and isinstance(want_v, (int, float)) and float(got) == float(want_v)):
        errs.append(f"# {key} = {value}: README's default is {want}")
for e in errs:
    print("    " + e)
print(f"    {n} commented defaults compared")
sys.exit(1 if errs else 0)
EOF
if ((have_yaml)); then
  "$py" -c 'import sys, yaml; sys.stdout.write(yaml.safe_load(open(sys.argv[1]))["data"]["monitor.toml"])' \
    deploy/kubernetes/configmap.yaml >"$tmp/configmap.toml" \
    && check_config "$tmp/configmap.toml" configmap.yaml:monitor.toml \
    && ok "configmap.yaml's monitor.toml: README's keys only" || bad "configmap.yaml's monitor.toml"
else
  skip "configmap.yaml's monitor.toml: no PyYAML"
fi

# The monitor's own check of both configs, where a vmafcompare with the monitor command is at
# hand ($VMAFCOMPARE, else this checkout's release build, else PATH's).
vmafcompare=${VMAFCOMPARE:-target/release/vmafcompare}
[[ -x $vmafcompare ]] || vmafcompare=$(command -v vmafcompare || true)
if [[ -n $vmafcompare ]] && "$vmafcompare" monitor --help >/dev/null 2>&1; then
  for f in deploy/monitor.example.toml "$tmp/configmap.toml"; do
    [[ -f $f ]] || continue
    shown=$f; [[ $f == "$tmp"/* ]] && shown="configmap.yaml's monitor.toml"
    if out=$("$vmafcompare" monitor --config "$f" --check 2>&1); then ok "monitor --check, $shown: $out"
    else sed 's/^/    /' <<<"$out"; bad "$vmafcompare monitor --check, $shown"; fi
  done
else
  skip "vmafcompare monitor --check: no vmafcompare with the monitor command (build it, or set VMAFCOMPARE)"
fi

# ---------------------------------------------------------------------------------------------
step systemd-analyze verify deploy/systemd/vmafcompare-monitor.service
unit=deploy/systemd/vmafcompare-monitor.service
if command -v systemd-analyze >/dev/null; then
  # verify wants the unit's commands to exist: a root with this system's units (for the
  # dependencies it resolves), the unit where the package puts it and a stand-in
  # /usr/bin/vmafcompare. Any line it prints (an unknown key, a bad value) is a failure: it
  # exits 0 on those.
  vr=$tmp/verify-root
  mkdir -p "$vr/usr/bin" "$vr/bin" "$vr/usr/lib/systemd"
  cp -a /usr/lib/systemd/system "$vr/usr/lib/systemd/" 2>/dev/null || mkdir -p "$vr/usr/lib/systemd/system"
  cp "$unit" "$vr/usr/lib/systemd/system/"
  printf '#!/bin/sh\n' >"$vr/usr/bin/vmafcompare" && chmod 755 "$vr/usr/bin/vmafcompare"
  cp "$(command -v kill)" "$vr/bin/kill" 2>/dev/null || cp /bin/kill "$vr/bin/kill"
  out=$(systemd-analyze verify --man=no --root="$vr" /usr/lib/systemd/system/vmafcompare-monitor.service 2>&1)
  rc=$?
  [[ -n $out ]] && sed 's/^/    /' <<<"$out"
  if ((rc == 0)) && [[ -z $out ]]; then ok "systemd-analyze verify: clean ($(systemd-analyze --version | head -1))"
  else bad "systemd-analyze verify (exit $rc)"; fi
else
  skip "systemd-analyze not found (package systemd)"
fi
# What the unit must say, whatever systemd accepts (README and deploy/README.md rely on it).
"$py" - "$unit" deploy/monitor.example.toml <<'EOF' && ok "unit: ExecStart/--check/reload/restart/user/stop timeout as documented" || bad "unit contents"
import re, sys, tomllib
u = open(sys.argv[1]).read()
lines = [l for l in u.splitlines() if l and not l.startswith("#")]
kv = {}
for l in lines:
    if "=" in l:
        k, v = l.split("=", 1)
        kv.setdefault(k.strip(), []).append(v.strip())
cfg = "/usr/bin/vmafcompare monitor --config /etc/vmafcompare/monitor.toml"
want = {
    "ExecStart": [cfg], "ExecStartPre": [cfg + " --check"],
    "ExecReload": [cfg + " --check", "/bin/kill -HUP $MAINPID"], "Restart": ["on-failure"],
}
errs = [f"{k}={v} (want {want[k]})" for k, v in kv.items() if k in want and v != want[k]]
errs += [f"no {k}=" for k in want if k not in kv]
if kv.get("DynamicUser") != ["yes"] and "User" not in kv:
    errs.append("neither DynamicUser=yes nor User=")
if "video" not in " ".join(kv.get("SupplementaryGroups", [])).split():
    errs.append("SupplementaryGroups lacks video")
# Settings that hide /dev/nvidia* (PrivateDevices, or an allowlist through DeviceAllow, also
# implied by ProtectClock) must come with an allowlist that names them.
allow = " ".join(kv.get("DeviceAllow", []))
closing = [k for k in ("PrivateDevices", "ProtectClock") if kv.get(k, ["no"])[-1] in ("yes", "true", "1")]
if kv.get("DevicePolicy", ["auto"])[-1] != "auto" or allow or closing:
    if kv.get("PrivateDevices", ["no"])[-1] in ("yes", "true", "1") or "nvidia" not in allow:
        errs.append(f"devices restricted ({closing or kv.get('DevicePolicy') or allow}) without /dev/nvidia*")
stop = tomllib.load(open(sys.argv[2], "rb")).get("server", {}).get("stop-timeout", 5.0)
t = kv.get("TimeoutStopSec", ["90"])[-1]
secs = float(re.sub(r"s$", "", t)) if re.fullmatch(r"[0-9.]+s?", t) else 0
if secs <= stop:
    errs.append(f"TimeoutStopSec={t} not above the config's stop-timeout {stop}")
for e in errs:
    print("    " + e)
sys.exit(1 if errs else 0)
EOF

# ---------------------------------------------------------------------------------------------
step promtool check rules / check config / test rules
if command -v promtool >/dev/null; then
  echo "  $(promtool --version 2>&1 | head -1)"
  out=$(promtool check rules deploy/prometheus/alerts.yml 2>&1) && ok "check rules: $(grep -o '[0-9]* rules found' <<<"$out")" \
    || { sed 's/^/    /' <<<"$out"; bad "promtool check rules"; }
  out=$(promtool check config deploy/prometheus/prometheus.example.yml 2>&1) && ok "check config: prometheus.example.yml (and its rule file)" \
    || { sed 's/^/    /' <<<"$out"; bad "promtool check config"; }
  out=$(promtool test rules deploy/prometheus/alerts.test.yml 2>&1) \
    && ok "test rules: alerts.test.yml ($(grep -c '^  - interval' deploy/prometheus/alerts.test.yml) groups, $(grep -c 'alertname:' deploy/prometheus/alerts.test.yml) alert checks)" \
    || { sed 's/^/    /' <<<"$out"; bad "promtool test rules"; }
  # The commented kubernetes_sd_configs example, uncommented. Debian's promtool is built without
  # Kubernetes service discovery ("field kubernetes_sd_configs not found"): there it is only
  # parsed as YAML.
  sed -n '/^  # - job_name: vmafcompare-pods/,$ { s/^  # \{0,1\}/  /; p }' deploy/prometheus/prometheus.example.yml >"$tmp/k8s-sd.part"
  { sed '/^  # - job_name: vmafcompare-pods/,$d' deploy/prometheus/prometheus.example.yml; cat "$tmp/k8s-sd.part"; } >"$tmp/prometheus.yml"
  cp deploy/prometheus/alerts.yml "$tmp/"
  if [[ ! -s $tmp/k8s-sd.part ]]; then bad "no commented kubernetes_sd example in prometheus.example.yml"
  elif out=$(promtool check config "$tmp/prometheus.yml" 2>&1); then ok "check config: the kubernetes_sd example, uncommented"
  elif grep -q 'field kubernetes_sd_configs not found' <<<"$out" && ((have_yaml)); then
    if "$py" -c 'import sys, yaml; c = yaml.safe_load(open(sys.argv[1])); j = [s for s in c["scrape_configs"] if s["job_name"] == "vmafcompare-pods"][0]; assert j["kubernetes_sd_configs"][0]["role"] == "pod" and j["relabel_configs"]' "$tmp/prometheus.yml"; then
      skip "promtool check config of the kubernetes_sd example: this promtool has no Kubernetes discovery (Debian build); parsed as YAML: ok"
    else bad "the kubernetes_sd example is not valid YAML of the expected shape"; fi
  else sed 's/^/    /' <<<"$out"; bad "the kubernetes_sd example, uncommented"; fi
else
  skip "promtool not found (Debian package prometheus)"
fi

# ---------------------------------------------------------------------------------------------
# PromQL names: every expression of the dashboard (and of the alerts) may name only README's
# metrics (histograms: _bucket, _sum, _count), README's labels plus the scrape's, and PromQL's
# functions. A small tokenizer, not a parser: strings, selectors' braces and ranges' brackets
# are read apart, so a typo in a metric, a label or a function is caught.
cat >"$tmp/promql.py" <<'EOF'
import json, re
FUNCS = set("""abs absent absent_over_time ceil changes clamp clamp_max clamp_min day_of_month
day_of_week day_of_year days_in_month delta deriv exp floor histogram_quantile holt_winters hour
idelta increase irate label_join label_replace ln log2 log10 minute month predict_linear rate
resets round scalar sgn sort sort_desc sqrt time timestamp vector year avg_over_time
min_over_time max_over_time sum_over_time count_over_time quantile_over_time stddev_over_time
stdvar_over_time last_over_time present_over_time sum min max avg group stddev stdvar count
count_values bottomk topk quantile label_values""".split())
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "inf", "nan"}
SCRAPE_LABELS = {"job", "instance", "le", "__name__", "node", "pod", "namespace", "site"}

def names(expr):
    """(metrics, labels, functions) an expression names."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    labels = set()
    for sel in re.findall(r"\{([^}]*)\}", e):
        labels.update(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)", sel))
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    for grp in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", e):
        labels.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", grp))
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\{?\w+\}?", " ", e)
    metrics, funcs = set(), set()
    for m in re.finditer(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[a-z]*|([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?", e):
        word, call = m.group(1), m.group(2)
        if not word or word in KEYWORDS:
            continue
        (funcs if call else metrics).add(word)
    return metrics, labels, funcs

def check(where, expr, contract, extra_metrics=()):
    series = set(contract["series"]) | set(extra_metrics)
    allowed_labels = set(contract["labels"]) | SCRAPE_LABELS
    m, l, f = names(expr)
    errs = []
    if not m:
        errs.append(f"{where}: names no metric: {expr}")
    errs += [f"{where}: metric {x!r} is not in README's table" for x in sorted(m - series)]
    errs += [f"{where}: label {x!r} is not one README's metrics carry" for x in sorted(l - allowed_labels)]
    errs += [f"{where}: unknown function {x!r}" for x in sorted(f - FUNCS)]
    return errs, m
EOF

step "Grafana dashboard: deploy/grafana/vmafcompare.json"
"$py" - "$contract" deploy/grafana/vmafcompare.json "$tmp" <<'EOF' && ok "dashboard: JSON, ids, layout, variables, PromQL names" || bad "dashboard"
import json, re, sys
sys.path.insert(0, sys.argv[3])
from promql import check
contract = json.load(open(sys.argv[1]))
try:
    d = json.load(open(sys.argv[2]))
except ValueError as e:
    print(f"    not valid JSON: {e}"); sys.exit(1)
errs = []
if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < 36:
    errs.append(f"schemaVersion {d.get('schemaVersion')!r}: want 36 or later")
def walk(panels):
    for p in panels:
        yield p
        yield from walk(p.get("panels", []))
panels = list(walk(d.get("panels", [])))
ids = [p.get("id") for p in panels]
dups = sorted({i for i in ids if ids.count(i) > 1 or i is None}, key=str)
if dups:
    errs.append(f"panel ids not unique: {dups}")
# Layout: 24 columns, no two panels on the same cell.
cells = {}
for p in panels:
    g = p.get("gridPos", {})
    if g.get("x", 0) + g.get("w", 0) > 24:
        errs.append(f"panel {p.get('id')} ({p.get('title')}): wider than 24 columns")
    for x in range(g.get("x", 0), g.get("x", 0) + g.get("w", 0)):
        for y in range(g.get("y", 0), g.get("y", 0) + g.get("h", 0)):
            if (x, y) in cells:
                errs.append(f"panels {cells[(x, y)]} and {p.get('id')} overlap at {x},{y}"); break
            cells[(x, y)] = p.get("id")
# Variables: a datasource one, channel and rendition from label_values.
var = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
if var.get("datasource", {}).get("type") != "datasource" or var["datasource"].get("query") != "prometheus":
    errs.append("no datasource variable of Prometheus data sources")
exprs = []
for name in ("channel", "rendition"):
    if var.get(name, {}).get("type") != "query":
        errs.append(f"no query variable {name}")
for name, v in var.items():
    if v.get("type") != "query":
        continue
    q = v["query"]["query"] if isinstance(v.get("query"), dict) else v.get("query")
    mm = q and re.fullmatch(r"label_values\((.+),\s*(\w+)\)", q)
    if not mm or mm.group(2) not in set(contract["labels"]) | {"job", "instance"} or (name in ("channel", "rendition") and mm.group(2) != name):
        errs.append(f"variable {name}: want label_values(METRIC, LABEL) of README's labels, got {q!r}")
    else:
        exprs.append((f"variable {name}", mm.group(1)))
# Every data panel: the datasource variable, targets with PromQL naming README's metrics.
seen = set()
titles = set()
for p in panels:
    if p.get("type") == "row":
        continue
    where = f"panel {p.get('id')} ({p.get('title')})"
    if p.get("title") in titles:
        errs.append(f"{where}: title used twice")
    titles.add(p.get("title"))
    if p.get("datasource", {}).get("uid") != "${datasource}":
        errs.append(f"{where}: datasource is not ${{datasource}}")
    if not p.get("targets"):
        errs.append(f"{where}: no targets")
    for t in p.get("targets", []):
        if not t.get("expr"):
            errs.append(f"{where}: target {t.get('refId')} has no expr"); continue
        exprs.append((f"{where} {t.get('refId')}", t["expr"]))
        for lab in re.findall(r"\{\{\s*(\w+)\s*\}\}", t.get("legendFormat", "")):
            if lab not in set(contract["labels"]) | {"job", "instance"}:
                errs.append(f"{where}: legend label {lab!r} is not one README's metrics carry")
for where, e in exprs:
    es, m = check(where, e, contract)
    errs += es
    seen |= m
# Every metric README lists is on the dashboard (a histogram through its _bucket series): a
# metric added to README's table fails here until a panel shows it.
for n in contract["metrics"]:
    if n not in seen and n + "_bucket" not in seen:
        errs.append(f"no panel shows {n}")
# Every expression as a recording rule, Grafana's variables filled in, for promtool to parse.
subst = lambda e: re.sub(r"\$__(rate_)?interval|\$__range", "5m", re.sub(r"\$\{?(channel|rendition|metric|job|instance)\}?", ".*", e))
with open(sys.argv[3] + "/dashboard-rules.yml", "w") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, (where, e) in enumerate(exprs):
        f.write(f"      - record: dashboard_expr_{i}\n        expr: {json.dumps(subst(e))}\n")
for e in errs:
    print("    " + e)
print(f"    {len([p for p in panels if p.get('type') != 'row'])} panels, {len(exprs)} expressions, "
      f"{len(seen & set(contract['series']))} of README's {len(contract['metrics'])} metrics shown")
sys.exit(1 if errs else 0)
EOF

if command -v promtool >/dev/null && [[ -f $tmp/dashboard-rules.yml ]]; then
  out=$(promtool check rules "$tmp/dashboard-rules.yml" 2>&1) \
    && ok "dashboard: promtool parses its $(grep -c 'record:' "$tmp/dashboard-rules.yml") expressions (as recording rules, variables filled in)" \
    || { sed 's/^/    /' <<<"$out"; bad "dashboard: promtool cannot parse its expressions"; }
fi

step "alert expressions: deploy/prometheus/alerts.yml"
if ((have_yaml)); then
  "$py" - "$contract" deploy/prometheus/alerts.yml "$tmp" <<'EOF' && ok "alerts: every expression names README's metrics (and up)" || bad "alert expressions"
import json, sys, yaml
sys.path.insert(0, sys.argv[3])
from promql import check
contract = json.load(open(sys.argv[1]))
rules = [r for g in yaml.safe_load(open(sys.argv[2]))["groups"] for r in g["rules"]]
errs = []
for r in rules:
    errs += check(r.get("alert") or r.get("record"), r["expr"], contract, extra_metrics={"up"})[0]
for e in errs:
    print("    " + e)
sys.exit(1 if errs else 0)
EOF
else
  skip "alert expressions: no PyYAML"
fi

# ---------------------------------------------------------------------------------------------
step "kubernetes-validate --strict deploy/kubernetes/{namespace,configmap,deployment,service}.yaml"
core=(deploy/kubernetes/namespace.yaml deploy/kubernetes/configmap.yaml deploy/kubernetes/deployment.yaml deploy/kubernetes/service.yaml)
if command -v kubernetes-validate >/dev/null || "$py" -c "import kubernetes_validate" 2>/dev/null; then
  kv() { if command -v kubernetes-validate >/dev/null; then kubernetes-validate "$@"; else "$py" -m kubernetes_validate "$@"; fi; }
  # The newest schemas it bundles, and an older release clusters still run.
  for k in "" 1.28.0; do
    out=$(kv --strict ${k:+-k "$k"} "${core[@]}" 2>&1)
    rc=$?
    if ((rc == 0)) && ! grep -qE '^(ERROR|WARN)' <<<"$out"; then
      ok "kubernetes-validate ${k:-(newest bundled schemas)}: $(grep -c passed <<<"$out") objects ($(grep -om1 'version [0-9.]*' <<<"$out"))"
    else sed 's/^/    /' <<<"$out"; bad "kubernetes-validate ${k:-newest}"; fi
  done
else
  skip "kubernetes-validate not installed (pip failed: offline?): core objects checked for structure only below"
fi
if ((have_yaml)); then
  # The ServiceMonitor (a CRD of the Prometheus Operator: not in Kubernetes' schemas) for its
  # structure, and what ties the objects together, for all of them.
  "$py" - deploy/kubernetes <<'EOF' && ok "structure and cross-references (ServiceMonitor: apiVersion, kind, selector, endpoint port; not schema-checked)" || bad "kubernetes structure"
import glob, os, sys, yaml
d = sys.argv[1]
objs, errs = {}, []
for f in sorted(glob.glob(os.path.join(d, "*.yaml"))):
    for o in yaml.safe_load_all(open(f)):
        if not isinstance(o, dict) or not o.get("apiVersion") or not o.get("kind"):
            errs.append(f"{f}: an object without apiVersion/kind"); continue
        objs[o["kind"]] = o
        if o["kind"] != "Kustomization" and not o.get("metadata", {}).get("name"):
            errs.append(f"{f}: {o['kind']} without metadata.name")
want = {"Namespace": "v1", "ConfigMap": "v1", "Deployment": "apps/v1", "Service": "v1",
        "ServiceMonitor": "monitoring.coreos.com/v1", "Kustomization": "kustomize.config.k8s.io/v1beta1"}
for kind, api in want.items():
    if kind not in objs:
        errs.append(f"no {kind}")
    elif objs[kind]["apiVersion"] != api:
        errs.append(f"{kind}: apiVersion {objs[kind]['apiVersion']}, want {api}")
if errs:
    print("\n".join("    " + e for e in errs)); sys.exit(1)
dep, svc, sm, cm, kus = objs["Deployment"], objs["Service"], objs["ServiceMonitor"], objs["ConfigMap"], objs["Kustomization"]
ns = objs["Namespace"]["metadata"]["name"]
for k in ("ConfigMap", "Deployment", "Service", "ServiceMonitor"):
    if objs[k]["metadata"].get("namespace") != ns:
        errs.append(f"{k}: namespace is not {ns}")
pod = dep["spec"]["template"]
podlabels = pod["metadata"]["labels"]
if dep["spec"].get("replicas") != 1:
    errs.append("Deployment: replicas must be 1 (one pod per channel group and GPU)")
if any(podlabels.get(k) != v for k, v in dep["spec"]["selector"]["matchLabels"].items()):
    errs.append("Deployment: selector does not match its pod labels")
if any(podlabels.get(k) != v for k, v in svc["spec"]["selector"].items()):
    errs.append("Service: selector does not match the Deployment's pods")
c = pod["spec"]["containers"][0]
ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
args = c.get("args", [])
if args[:1] != ["monitor"] or "--config" not in args or "--listen" not in args:
    errs.append(f"container args {args}: want monitor --config FILE --listen ADDR:PORT")
else:
    listen_port = int(args[args.index("--listen") + 1].rsplit(":", 1)[1])
    conf = args[args.index("--config") + 1]
    if listen_port != ports.get("metrics"):
        errs.append(f"--listen port {listen_port} is not the metrics containerPort {ports.get('metrics')}")
    mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
    vols = {v["name"]: v for v in pod["spec"].get("volumes", [])}
    cmvol = [n for n, v in vols.items() if v.get("configMap", {}).get("name") == cm["metadata"]["name"]]
    if not cmvol or os.path.join(mounts.get(cmvol[0], "?"), "monitor.toml") != conf or "monitor.toml" not in cm["data"]:
        errs.append(f"--config {conf} is not the ConfigMap's monitor.toml where it is mounted")
ann = pod["metadata"].get("annotations", {})
if ann.get("prometheus.io/scrape") != "true" or ann.get("prometheus.io/port") != str(ports.get("metrics")) or ann.get("prometheus.io/path") != "/metrics":
    errs.append(f"pod annotations prometheus.io/*: {ann}")
for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
    g = c.get(probe, {}).get("httpGet", {})
    if g.get("path") != path or g.get("port") not in ("metrics", ports.get("metrics")):
        errs.append(f"{probe}: want GET {path} on the metrics port, got {g}")
import tomllib
stop = tomllib.loads(cm["data"].get("monitor.toml", "")).get("server", {}).get("stop-timeout", 5.0)
if pod["spec"].get("terminationGracePeriodSeconds", 30) <= stop:
    errs.append(f"terminationGracePeriodSeconds is not above the config's stop-timeout {stop}")
if str(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu")) != "1":
    errs.append("resources.limits nvidia.com/gpu is not 1")
svcports = {p["name"]: p for p in svc["spec"]["ports"]}
if "metrics" not in svcports or svcports["metrics"].get("targetPort") not in ("metrics", ports.get("metrics")):
    errs.append("Service: no port 'metrics' targeting the container's metrics port")
smspec = sm.get("spec", {})
if any(svc["metadata"]["labels"].get(k) != v for k, v in smspec.get("selector", {}).get("matchLabels", {}).items()) or not smspec.get("selector"):
    errs.append("ServiceMonitor: selector does not match the Service's labels")
if ns not in smspec.get("namespaceSelector", {}).get("matchNames", [ns]):
    errs.append("ServiceMonitor: namespaceSelector misses the namespace")
eps = smspec.get("endpoints", [])
if not eps or any(e.get("port") not in svcports or e.get("path", "/metrics") != "/metrics" for e in eps):
    errs.append(f"ServiceMonitor: endpoints {eps} must name the Service's port and /metrics")
jl = smspec.get("jobLabel")
if jl and not svc["metadata"]["labels"].get(jl, "").startswith("vmafcompare"):
    errs.append(f"ServiceMonitor: jobLabel {jl} gives a job the alerts (job=~\"vmafcompare.*\") miss")
listed = set(kus.get("resources", []))
missing = {os.path.basename(f) for f in glob.glob(os.path.join(d, "*.yaml"))} - listed - {"kustomization.yaml"}
if missing:
    errs.append(f"kustomization.yaml does not list {sorted(missing)}")
for e in errs:
    print("    " + e)
sys.exit(1 if errs else 0)
EOF
else
  skip "kubernetes structure: no PyYAML"
fi

# ---------------------------------------------------------------------------------------------
step "bash -n (and shellcheck -S warning where installed): the container and package scripts"
for f in deploy/container/build-image.sh scripts/container-test.sh scripts/package-test.sh scripts/deploy-check.sh; do
  if [[ ! -f $f ]]; then bad "$f missing"
  elif ! out=$(bash -n "$f" 2>&1); then sed 's/^/    /' <<<"$out"; bad "$f: bash -n"
  elif command -v shellcheck >/dev/null && ! out=$(shellcheck -x -S warning "$f" 2>&1); then sed 's/^/    /' <<<"$out"; bad "$f: shellcheck"
  else ok "$f$(command -v shellcheck >/dev/null && echo ' (bash -n, shellcheck)')"; fi
done

echo
echo "deploy-check took $((SECONDS - start)) s"
echo "deploy: $pass passed, $fail failed, $skipped skipped"
((fail == 0))
