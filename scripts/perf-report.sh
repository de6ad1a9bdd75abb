#!/usr/bin/env bash
# perf-report.sh: runs the benchmark set of docs/performance.md and rewrites
# its tables in place: the generated sections of docs/performance.md, of
# docs/algorithms.md and the headline table of README.md, each between a
# pair of marker comments (<!-- perf-report begin NAME --> and
# <!-- perf-report end NAME -->). Text outside the markers is left alone.
#
# usage: scripts/perf-report.sh [--full] [--yardstick FILE] [--bench FILE]
#                               [--out DIR] [--no-write]
#        scripts/perf-report.sh --from DIR [--no-write]
#   --full        the full set: 50 measured ticks instead of 30, the
#                 policy tables at 100,000 entities instead of 20,000 and
#                 with larger crowds, the algorithms at 20,000 entities
#                 instead of 10,000, and the 1,000,000-entity table (about
#                 10 minutes on 2 cores; the default set takes about 2)
#   --yardstick   the yardstick, a separate reference implementation: its
#                 source file (grid_fast.c, built here with cc -O2
#                 -march=native) or a built binary. Default: $AOI_YARDSTICK.
#                 Without one, the yardstick's columns say it was not run.
#   --bench       the aoi-bench to run (default build/aoi-bench)
#   --out DIR     where the raw JSON lines and outputs go (default
#                 build/perf-report); each run's command is kept beside it
#   --no-write    run and print the tables, but rewrite no file
#   --from DIR    run nothing: rewrite the tables from the results an
#                 earlier run left in DIR (its --out)
#
# Build first, from the repository root:
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build -j2
# Run on a quiet machine: every table is one run of each command, and a
# shared machine's timings wander by 10-30% between runs.
# Needs bash and python3.
set -eu
cd "$(dirname "$0")/.."

full=0
yardstick=${AOI_YARDSTICK:-}
bench=build/aoi-bench
out=build/perf-report
write=1
from=""
usage="usage: scripts/perf-report.sh [--full] [--yardstick FILE] [--bench FILE] [--out DIR] [--no-write] | --from DIR [--no-write]"
while [ $# -gt 0 ]; do
  case $1 in
  --full) full=1 ;;
  --yardstick) yardstick=${2:?$usage}; shift ;;
  --bench) bench=${2:?$usage}; shift ;;
  --out) out=${2:?$usage}; shift ;;
  --no-write) write=0 ;;
  --from) from=${2:?$usage}; shift ;;
  -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
  *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
command -v python3 >/dev/null 2>&1 ||
  { echo "perf-report: needs python3" >&2; exit 2; }

if [ "$full" = 1 ]; then
  ticks=50 policy_n=100000 crowd_capped="2000 8000 32000"
  crowd_open="2000 8000" algo_n=20000 algo_ticks=20
else
  ticks=30 policy_n=20000 crowd_capped="2000 8000" crowd_open="2000"
  algo_n=10000 algo_ticks=10
fi
seed=12345

# run NAME ARGS...: one aoi-bench command, its JSON lines in NAME.jsonl and
# the command as a reader would type it in NAME.cmd.
run() {
  name=$1
  shift
  echo "perf-report: $bench $*" >&2
  printf '%s\n' "build/aoi-bench $*" >"$out/$name.cmd"
  "$bench" --json "$@" >"$out/$name.jsonl"
}

# yard NAME N THREADS: one yardstick run, its output in NAME.txt.
yard() {
  [ -n "$ys" ] || return 0
  echo "perf-report: yardstick n=$2 threads=$3 ticks=$ticks" >&2
  "$ys" "n=$2" "threads=$3" "ticks=$ticks" >"$out/$1.txt"
}

# The yardstick into $ys: a source file is built, a binary used as it is;
# none, or none there, leaves $ys empty.
find_yardstick() {
  ys=""
  [ -n "$yardstick" ] || return 0
  if [ ! -e "$yardstick" ]; then
    echo "perf-report: no yardstick at $yardstick: its columns are skipped" >&2
  elif [ -x "$yardstick" ] && [ ! -d "$yardstick" ]; then
    ys=$yardstick
  else
    ys=$out/grid_fast
    cc -O2 -march=native -o "$ys" "$yardstick" -lm -lpthread
  fi
}

# Every run of the set, into $out.
run_set() {
  # The headline: the yardstick right before and right after the engine.
  # The frame is timed twice: delivered by aoi_deliver, and by
  # aoi_deliver_slots (--slots), the path for servers that encode their
  # own packets.
  for n in 100000 20000 5000; do
    yard "yard-$n-1-before" "$n" 1
    yard "yard-$n-2-before" "$n" 2
    run "uniform-$n" --scenario uniform --entities "$n" --threads 1,2 \
      --ticks "$ticks" --seed "$seed"
    run "uniform-slots-$n" --scenario uniform --entities "$n" \
      --threads 1,2 --ticks "$ticks" --seed "$seed" --slots --no-baseline
    yard "yard-$n-1-after" "$n" 1
    yard "yard-$n-2-after" "$n" 2
  done

  # The ways to submit a move, at 100,000 and 1 thread.
  for variant in id batch refs sparse sparse-batch; do
    case $variant in
    id) flags="" ;;
    batch) flags="--batch" ;;
    refs) flags="--refs" ;;
    sparse) flags="--sparse-ids" ;;
    sparse-batch) flags="--sparse-ids --batch" ;;
    esac
    # shellcheck disable=SC2086
    run "submit-$variant" --scenario uniform --entities 100000 --threads 1 \
      --ticks 10 --seed "$seed" --no-baseline $flags
  done

  run idle --scenario idle --entities 100000 --threads 1,2 --ticks "$ticks" \
    --seed "$seed" --no-baseline

  # How the tick follows the crowd's speed: a step of 1%, 5% (the
  # default) and 20% of the view radius a tick.
  for step in 0.1 0.5 2; do
    run "step-$step" --scenario uniform --entities 100000 --threads 2 \
      --step "$step" --ticks "$ticks" --seed "$seed" --no-baseline
  done

  run cliffs --scenario outlier,spectator,mixed-radius,flood \
    --entities 20000 --threads 1,2 --ticks "$ticks" --seed "$seed"

  for shards in 2 16; do
    run "spectator-$shards" --scenario spectator --entities 100000 \
      --threads 2 --shards "$shards" --ticks 20 --seed "$seed" --no-baseline
    run "spectator-$shards-cap" --scenario spectator --spectator-cap 200 \
      --entities 100000 --threads 2 --shards "$shards" --ticks 20 \
      --seed "$seed" --no-baseline
  done

  for policy in none cap32 cap8 appeal bands; do
    case $policy in
    none) flags="" ;;
    cap32) flags="--cap 32" ;;
    cap8) flags="--cap 8" ;;
    appeal) flags="--appeal 0.01:50" ;;
    bands) flags="--move-every 5:2,8:4" ;;
    esac
    # shellcheck disable=SC2086
    run "policy-$policy" --scenario uniform --entities "$policy_n" \
      --threads 1,2 --ticks 10 --seed "$seed" --no-baseline $flags
  done
  for n in $crowd_capped; do
    run "crowd-$n-cap" --scenario crowd --entities "$n" --threads 1,2 \
      --ticks 10 --seed "$seed" --no-baseline --cap 32
  done
  for n in $crowd_open; do
    run "crowd-$n-open" --scenario crowd --entities "$n" --threads 1,2 \
      --ticks 3 --seed "$seed" --no-baseline
  done

  if [ "$full" = 1 ]; then
    run million-100k --scenario uniform --entities 100000 --threads 2 \
      --ticks 10 --seed "$seed" --no-baseline
    run million --scenario uniform --entities 1000000 --threads 2 \
      --ticks 10 --seed "$seed" --no-baseline
  fi

  for s in uniform idle sparse hotspot teleport; do
    run "algo-$s" --scenario "$s" --entities "$algo_n" --threads 1,2 \
      --ticks "$algo_ticks" --seed "$seed" --baseline all
  done
}

# Where and on what the runs were made, for every table's caption: one
# line each in $out/context.
write_context() {
  commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  if [ -n "$(git status --porcelain -- src include bench CMakeLists.txt \
             2>/dev/null)" ]; then
    commit="$commit with uncommitted changes"
  fi
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null |
        head -n 1)
  cpu="${cpu:-unknown CPU}, $(nproc 2>/dev/null || echo '?') CPUs"
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' \
    "$(dirname "$bench")/CMakeCache.txt" 2>/dev/null || true)
  yard_note=absent
  [ -n "$ys" ] && yard_note=present
  printf '%s\n' "$full" "$commit" "$cpu" "${build_type:-unknown}" "$ticks" \
    "$yard_note" >"$out/context"
}

if [ -n "$from" ]; then
  [ -f "$from/context" ] ||
    { echo "perf-report: $from holds no results of a run" >&2; exit 2; }
  out=$from
else
  [ -x "$bench" ] ||
    { echo "perf-report: no $bench: build first (see --help)" >&2; exit 2; }
  rm -rf "$out"
  mkdir -p "$out"
  find_yardstick
  run_set
  write_context
fi

python3 - "$out" "$write" <<'PY'
import json, os, re, sys

out, write = sys.argv[1], sys.argv[2] == "1"
with open(os.path.join(out, "context")) as f:
    full, commit, cpu, build_type, ticks, yard = f.read().split("\n")[:6]
full, ticks = full == "1", int(ticks)

def lines(name):
    path = os.path.join(out, name + ".jsonl")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]

def by_threads(name):
    rows = lines(name)
    return {r["threads"]: r for r in rows} if rows else {}

def command(*names):
    cmds = []
    for n in names:
        path = os.path.join(out, n + ".cmd")
        if os.path.exists(path):
            cmds.append(open(path).read().strip())
    return "\n".join(cmds)

def yard_ms(name):
    path = os.path.join(out, name + ".txt")
    if not os.path.exists(path):
        return None
    m = re.search(r"tick_ms median=([0-9.]+)", open(path).read())
    return float(m.group(1)) if m else None

def ms(v):
    if v is None:
        return "n/a"
    return "%.2f ms" % v if v < 10 else "%.1f ms" % v

def num(v):
    return "n/a" if v is None else "{:,}".format(int(round(v)))

def ratio(a, b):
    return "n/a" if a is None or not b else "%.2fx" % (a / b)

def caption(*names, yardstick=False):
    text = ("Generated by `scripts/perf-report.sh%s` at commit `%s`, %s "
            "build, on %s." % (" --full" if full else "", commit, build_type,
                               cpu))
    text += "\n\n```sh\n" + command(*names) + "\n```"
    if yardstick:
        if yard == "present":
            text += ("\n\nThe yardstick ran with the same n, threads and "
                     "ticks right before and right after the engine "
                     "(`n=N threads=T ticks=%d`); its column gives both "
                     "medians, and the ratio is the engine's tick over "
                     "each." % ticks)
        else:
            text += ("\n\nThe yardstick was not run (no `--yardstick` or "
                     "`AOI_YARDSTICK`): its columns say n/a.")
    return text

def table(header, rows):
    text = "| " + " | ".join(header) + " |\n"
    text += "| " + " | ".join("---" for _ in header) + " |\n"
    for r in rows:
        text += "| " + " | ".join(r) + " |\n"
    return text

sections = {}

# headline: README and performance.md
rows = []
for n in (100000, 20000, 5000):
    runs = by_threads("uniform-%d" % n)
    slots = by_threads("uniform-slots-%d" % n)
    for t in (1, 2):
        r = runs.get(t)
        if r is None:
            continue
        fs = slots.get(t, {}).get("frame_ms_median")
        before, after = yard_ms("yard-%d-%d-before" % (n, t)), \
            yard_ms("yard-%d-%d-after" % (n, t))
        ys = [v for v in (before, after) if v is not None]
        ys_text = "n/a" if not ys else " / ".join(ms(v) for v in ys)
        ratios = sorted(r["tick_ms_median"] / v for v in ys)
        ends = ["%.2f" % ratios[0], "%.2f" % ratios[-1]] if ratios else []
        ratio_text = "n/a" if not ends else \
            (ends[0] if ends[0] == ends[1] else "-".join(ends)) + "x"
        frames = sorted(fs / v for v in ys) if fs is not None else []
        frame_text = "n/a" if not frames else \
            ("%.2f" % frames[0] if "%.2f" % frames[0] == "%.2f" % frames[-1]
             else "%.2f-%.2f" % (frames[0], frames[-1])) + "x"
        rows.append(["uniform, {:,}".format(n), str(t), ms(r["tick_ms_median"]),
                     ms(r["baseline_tick_ms_median"]), ys_text, ratio_text,
                     ms(r["frame_ms_median"]), ms(fs), frame_text])
sections["headline"] = table(
    ["crowd", "threads", "engine tick", "nine-grid tick (1 thread)",
     "yardstick tick", "engine / yardstick", "engine frame",
     "engine frame, slots", "frame, slots / yardstick"], rows) + "\n" + \
    caption("uniform-100000", "uniform-slots-100000", "uniform-20000",
            "uniform-slots-20000", "uniform-5000", "uniform-slots-5000",
            yardstick=True) + \
    ("\n\nThe engine frame is submit + tick + delivery of every event by "
     "`aoi_deliver`; the slots frame delivers by `aoi_deliver_slots` "
     "(`--slots`), building the same bytes from the entity table.")

# uniform at 100,000
runs = by_threads("uniform-100000")
if runs:
    one, two = runs.get(1), runs.get(2)
    def both(f):
        return [f(one), f(two)]
    phases = lambda r: "%s / %s / %s" % (ms(r["apply_ms_median"]),
                                         ms(r["exchange_ms_median"]),
                                         ms(r["compute_ms_median"]))
    rows = [
        ["tick (median)"] + both(lambda r: ms(r["tick_ms_median"])),
        ["tick, 99th percentile"] + both(lambda r: ms(r["tick_ms_p99"])),
        ["apply / exchange / compute"] + both(phases),
        ["submit (100,000 `aoi_move`)"] + both(lambda r: ms(r["submit_ms_median"])),
        ["delivery (`aoi_deliver`, every event copied)"] +
        both(lambda r: ms(r["deliver_ms_median"])),
        ["frame (submit + tick + delivery)"] + both(lambda r: ms(r["frame_ms_median"])),
        ["events a tick"] + both(lambda r: num(r["events_per_tick"])),
        ["heap peak"] + both(lambda r: "%s B/entity" % num(r["bytes_per_entity"])),
        ["allocator calls a tick (last half)"] +
        both(lambda r: "%.2f" % r["allocs_per_tick"]),
        ["nine-grid tick (1 thread)"] + both(lambda r: ms(r["baseline_tick_ms_median"])),
        ["checksum"] + both(lambda r: "`%s`, %s the nine-grid's" % (
            r["checksum"], "equal to" if r["baseline_checksum_match"] else
            "**differs from**")),
    ]
    text = table(["", "1 thread", "2 threads"], rows)
    text += ("\n2 threads over 1: tick %s, frame %s.\n\n" % (
        ratio(one["tick_ms_median"], two["tick_ms_median"]),
        ratio(one["frame_ms_median"], two["frame_ms_median"])))
    sections["uniform"] = text + caption("uniform-100000")

# the ways to submit
rows = []
names = [("id", "by id from a counter (`aoi_move`)"),
         ("batch", "by id, in one `aoi_move_many` (`--batch`)"),
         ("refs", "by reference (`aoi_move_ref`, `--refs`)"),
         ("sparse", "by id spread over 64 bits (`--sparse-ids`)"),
         ("sparse-batch", "spread ids in one `aoi_move_many`")]
for key, label in names:
    r = by_threads("submit-" + key).get(1)
    if r is None:
        continue
    per = r["submit_ms_median"] * 1e6 / r["updates_per_tick"]
    rows.append([label, ms(r["submit_ms_median"]), "%.1f ns" % per])
sections["submit"] = table(["moves", "submit a tick", "a move"], rows) + \
    "\n" + caption(*["submit-" + k for k, _ in names])

# the step sweep
rows = []
steps = ("0.1", "0.5", "2")
base = by_threads("step-0.5").get(2)
for step in steps:
    r = by_threads("step-" + step).get(2)
    if r is None:
        continue
    rows.append(["%s (%.0f%% of the radius)" % (step, float(step) * 10),
                 ms(r["tick_ms_median"]),
                 ratio(r["tick_ms_median"], base["tick_ms_median"] if base else None),
                 ms(r["compute_ms_median"]), num(r["events_per_tick"]),
                 ms(r["frame_ms_median"])])
sections["step"] = table(["step a tick", "tick", "tick / default step",
                          "compute", "events a tick", "frame"], rows) + \
    "\n" + caption(*["step-" + s for s in steps])

# idle
idle, walk = by_threads("idle"), by_threads("uniform-100000")
rows = []
for t in (1, 2):
    r, w = idle.get(t), walk.get(t)
    if r is None:
        continue
    rows.append([str(t), ms(r["tick_ms_median"]),
                 ms(w["tick_ms_median"]) if w else "n/a",
                 "%.0f%%" % (100 * r["tick_ms_median"] / w["tick_ms_median"])
                 if w else "n/a",
                 ms(r["frame_ms_median"]), num(r["events_per_tick"]),
                 "%s B/entity" % num(r["bytes_per_entity"])])
sections["idle"] = table(["threads", "`idle` tick", "`uniform` tick",
                          "idle / uniform", "`idle` frame", "events a tick",
                          "heap peak"], rows) + "\n" + \
    caption("idle", "uniform-100000")

# the cliffs
rows = []
cl = lines("cliffs") or []
labels = {"outlier": "one marker at (3e38, 3e38)",
          "spectator": "one watcher of radius 500 (max_radius)",
          "mixed-radius": "1% of the watchers at 10x the radius",
          "flood": "16 moves an entity a tick, 1% respawned"}
for s in ("outlier", "spectator", "mixed-radius", "flood"):
    rs = {r["threads"]: r for r in cl if r["scenario"] == s}
    if not rs:
        continue
    r1, r2 = rs.get(1), rs.get(2)
    cliff = lambda r: "n/a" if r is None else "%.2f" % r["cliff_ratio"]
    rows.append(["`%s`: %s" % (s, labels[s]), cliff(r1), cliff(r2),
                 "%.2f" % r1["baseline_cliff_ratio"] if r1 and
                 r1["baseline_cliff_ratio"] is not None else "n/a",
                 num((r1 or r2)["events_per_tick"]),
                 num(r2["ghosts_per_tick"]) if r2 else "n/a"])
sections["cliffs"] = table(["odd part", "cliff, 1 thread", "cliff, 2 threads",
                            "nine-grid's cliff", "events a tick",
                            "ghosts a tick, 2 threads"], rows) + "\n" + \
    caption("cliffs")

# the spectator by shards
rows = []
for shards in (2, 16):
    for cap in ("", "-cap"):
        r = by_threads("spectator-%d%s" % (shards, cap)).get(2)
        if r is None:
            continue
        rows.append([str(shards), "capped at 200" if cap else "no cap",
                     ms(r["tick_ms_median"]), ms(r["plain_tick_ms_median"]),
                     "%.2f" % r["cliff_ratio"], num(r["ghosts_per_tick"])])
sections["spectator"] = table(["shards", "camera", "tick", "plain crowd's tick",
                               "cliff", "ghosts a tick"], rows) + "\n" + \
    caption("spectator-2", "spectator-2-cap", "spectator-16",
            "spectator-16-cap")

# the policies on the uniform crowd
rows = []
pnames = [("none", "none"), ("cap32", "`--cap 32`"), ("cap8", "`--cap 8`"),
          ("appeal", "`--appeal 0.01:50` (1% seen from 50)"),
          ("bands", "`--move-every 5:2,8:4`")]
base = by_threads("policy-none").get(1)
for key, label in pnames:
    rs = by_threads("policy-" + key)
    if not rs:
        continue
    r1, r2 = rs.get(1), rs.get(2)
    events = r1["events_per_tick"]
    change = "" if key == "none" or not base else \
        " (%+.0f%%)" % (100 * (events / base["events_per_tick"] - 1))
    rows.append([label, num(events) + change,
                 "%s / %s" % (ms(r1["tick_ms_median"]), ms(r2["tick_ms_median"])),
                 "%s / %s" % (ms(r1["frame_ms_median"]), ms(r2["frame_ms_median"])),
                 "%s / %s B/entity" % (num(r1["bytes_per_entity"]),
                                       num(r2["bytes_per_entity"]))])
text = table(["policy", "events a tick", "tick, 1 / 2 threads",
              "frame, 1 / 2 threads", "heap, 1 / 2 threads"], rows)
text += "\n" + caption(*["policy-" + k for k, _ in pnames])
rows = []
crowd_names = sorted((n for n in os.listdir(out)
                      if n.startswith("crowd-") and n.endswith(".cmd")),
                     key=lambda n: (n.endswith("open.cmd"),
                                    int(n.split("-")[1])))
crowd_names = [n[:-4] for n in crowd_names]
for name in crowd_names:
    rs = by_threads(name)
    if not rs:
        continue
    r1, r2 = rs.get(1), rs.get(2)
    rows.append(["{:,}".format(r1["entities"]),
                 str(r1["cap"]) if r1["cap"] else "none",
                 num(r1["events_per_tick"]),
                 "%s / %s" % (ms(r1["tick_ms_median"]), ms(r2["tick_ms_median"])),
                 "%s / %s" % (ms(r1["frame_ms_median"]), ms(r2["frame_ms_median"]))])
text += "\n\n`crowd`, everyone within one square of the view radius:\n\n"
text += table(["entities", "cap", "events a tick", "tick, 1 / 2 threads",
               "frame, 1 / 2 threads"], rows)
text += "\n" + caption(*crowd_names)
sections["policies"] = text

# a million
small_run, big = by_threads("million-100k").get(2), by_threads("million").get(2)
if small_run and big:
    rows = []
    for label, key, fmt in (("tick", "tick_ms_median", ms),
                            ("submit, by id", "submit_ms_median", ms),
                            ("delivery", "deliver_ms_median", ms),
                            ("frame", "frame_ms_median", ms)):
        rows.append([label, fmt(small_run[key]), fmt(big[key]),
                     ratio(big[key], small_run[key])])
    rows.append(["heap peak", "%s B/entity" % num(small_run["bytes_per_entity"]),
                 "%s B/entity" % num(big["bytes_per_entity"]), ""])
    sections["million"] = table(["2 threads", "100,000", "1,000,000",
                                 "ratio"], rows) + "\n" + \
        caption("million-100k", "million")
else:
    sections["million"] = ("Not in the default set: `scripts/perf-report.sh "
                           "--full` runs it (about 1 GB of memory).\n")

# the algorithms
text = ""
algos = [("brute", "brute force"), ("ninegrid", "nine-grid"),
         ("tower", "tower"), ("xlist", "cross-linked list"),
         ("verlet", "kept candidate lists")]
for s in ("uniform", "idle", "sparse", "hotspot", "teleport"):
    rs = by_threads("algo-" + s)
    if not rs:
        continue
    r1 = rs[min(rs)]
    rows = []
    for key, label in algos:
        frame = r1.get("algo_%s_frame_ms_median" % key)
        if frame is None:
            continue
        ev = r1["algo_%s_events_per_tick" % key]
        rows.append([label, ms(frame), ms(r1["algo_%s_submit_ms_median" % key]),
                     "%.1f M" % (ev / frame / 1e3),
                     "%s B" % num(r1["algo_%s_bytes_per_entity" % key])])
    for t in sorted(rs):
        r = rs[t]
        rows.append(["engine, %d thread%s" % (t, "" if t == 1 else "s"),
                     ms(r["frame_ms_median"]), ms(r["submit_ms_median"]),
                     "%.1f M" % (r["events_per_tick"] / r["frame_ms_median"] / 1e3),
                     "%s B" % num(r["bytes_per_entity"])])
    same = all(r1["algo_%s_checksum_match" % k] for k, _ in algos
               if r1.get("algo_%s_checksum_match" % k) is not None)
    text += "`%s`, %s entities, %s events a tick%s:\n\n" % (
        s, num(r1["entities"]), num(r1["events_per_tick"]),
        "" if same else " (**a checksum differs from the engine's**)")
    text += table(["", "time per tick", "of which submit", "events/s",
                   "memory per entity"], rows) + "\n"
sections["algorithms"] = text + caption(*["algo-" + s for s in
    ("uniform", "idle", "sparse", "hotspot", "teleport")])

pages = {"README.md": ["headline"],
         "docs/performance.md": ["headline", "uniform", "submit", "step", "idle",
                                 "cliffs", "spectator", "policies", "million"],
         "docs/algorithms.md": ["algorithms"]}
for page, names in pages.items():
    if not write:
        for n in names:
            print("== %s: %s\n%s" % (page, n, sections[n]))
        continue
    with open(page) as f:
        doc = f.read()
    for n in names:
        begin = "<!-- perf-report begin %s -->" % n
        end = "<!-- perf-report end %s -->" % n
        i, j = doc.find(begin), doc.find(end)
        if i < 0 or j < i:
            sys.exit("perf-report: %s has no %s ... %s" % (page, begin, end))
        doc = doc[:i + len(begin)] + "\n" + sections[n].rstrip("\n") + \
            "\n" + doc[j:]
    with open(page, "w") as f:
        f.write(doc)
    print("perf-report: rewrote %s (%s)" % (page, ", ".join(names)),
          file=sys.stderr)
PY
