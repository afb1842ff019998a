#!/bin/bash
# SPDX-License-Identifier: MIT
# The fixed cost of a prealloc command: its whole process (fork, exec,
# loading, the context, the store, the checks, the report, exit) on 16 MiB,
# where the memory's own work is small, side by side for one or two builds
# (BUILD_DIR, and OLD_BUILD_DIR to compare: the runs alternate between
# them), medians of REPS after one warm-up of each (issue 52):
#   create  prealloc --page-size 4k --file F 16M   (then rm, untimed)
#   take    prealloc warm take ... 16M             (give and fill untimed)
#   clear   prealloc clear F                       (a populated 16 MiB file)
#   renew   prealloc warm fill, renewing one 16 MiB file given back
#   exec    prealloc --version                     (exec and loading alone)
# on a private tmpfs (4k pages: no hugepage pool touched). Root (it mounts).
# It reports; it does not pass or fail.
#
#   tests/bench/fixed-cost.sh BUILD_DIR [OLD_BUILD_DIR] [REPS]
set -eu
new=$(cd "${1:?usage: fixed-cost.sh BUILD_DIR [OLD_BUILD_DIR] [REPS]}" && pwd)/prealloc/cli/prealloc
old=${2:+$(cd "$2" && pwd)/prealloc/cli/prealloc}
reps=${3:-21}
[ "$(id -u)" -eq 0 ] || { echo "fixed-cost.sh: needs root (a private tmpfs)" >&2; exit 1; }
out=$(mktemp -d /tmp/prealloc-fixed-cost.XXXXXX)
mnt=$out/mnt
mkdir -p "$mnt"
cleanup() {
	umount "$mnt" 2> /dev/null || true
	rm -rf "$out"
}
trap cleanup EXIT
mount -t tmpfs -o size=256M,mode=1777 none "$mnt"
python3 - "$out" "$mnt" "$reps" "$new" ${old:+"$old"} <<'PY'
import os, statistics, subprocess, sys, time
out, mnt, reps, builds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
names = ["new", "old"][:len(builds)]

def env(b):
    e = dict(os.environ)
    e["PREALLOC_STATE_DIR"] = f"{out}/state-{b}"
    e["PREALLOC_WARM_CONF"] = f"{out}/warm-{b}.conf"
    return e

def run(p, b, *args, timed=True):
    t = time.perf_counter()
    r = subprocess.run([p, *args], env=env(b), stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    t = time.perf_counter() - t
    if r.returncode:
        sys.exit(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.decode().strip()}")
    return t

def setup(p, b):
    with open(env(b)["PREALLOC_WARM_CONF"], "w") as f:
        f.write(f"node0.4k = 16M @ {mnt}/w-{b}\n")
    os.makedirs(f"{mnt}/w-{b}", exist_ok=True)
    run(p, b, "warm", "fill")
    run(p, b, "--page-size", "4k", "--file", f"{mnt}/c-{b}", "16M")

def create(p, b):
    t = run(p, b, "--page-size", "4k", "--file", f"{mnt}/x-{b}", "16M")
    run(p, b, "rm", f"{mnt}/x-{b}")
    return t

def take(p, b):
    t = run(p, b, "warm", "take", "--node", "0", "--page-size", "4k", "--mount",
            f"{mnt}/w-{b}", "--to", f"{mnt}/w-{b}/g", "--holder", "bench", "16M")
    run(p, b, "warm", "give", "--holder", "bench")
    run(p, b, "warm", "fill")
    return t

def renew(p, b):
    run(p, b, "warm", "take", "--node", "0", "--page-size", "4k", "--mount",
        f"{mnt}/w-{b}", "--to", f"{mnt}/w-{b}/g", "--holder", "bench", "16M")
    run(p, b, "warm", "give", "--holder", "bench")
    return run(p, b, "warm", "fill")

ops = {
    "exec": lambda p, b: run(p, b, "--version"),
    "create": create,
    "take": take,
    "clear": lambda p, b: run(p, b, "clear", f"{mnt}/c-{b}"),
    "renew": renew,
}
for p, b in zip(builds, names):
    setup(p, b)
samples = {(o, b): [] for o in ops for b in names}
for i in range(reps + 1):
    for o, f in ops.items():
        order = list(zip(builds, names))
        if i % 2:
            order.reverse()
        for p, b in order:
            t = f(p, b)
            if i:		# round 0: the warm-up
                samples[(o, b)].append(t)
for p, b in zip(builds, names):
    subprocess.run([p, "rm", f"{mnt}/c-{b}"], env=env(b), capture_output=True)
    with open(env(b)["PREALLOC_WARM_CONF"], "w") as f:
        f.write(f"node0.4k = 0 @ {mnt}/w-{b}\n")
    subprocess.run([p, "warm", "fill"], env=env(b), capture_output=True)
    subprocess.run([p, "gc"], env=env(b), capture_output=True)
print(f"# whole process, 16 MiB on 4k tmpfs, medians of {reps} (ms); {os.uname().release}")
print("| command | " + " | ".join(names) + (" | new/old |" if len(names) == 2 else " |"))
print("|---|" + "---|" * len(names) + ("---|" if len(names) == 2 else ""))
for o in ops:
    m = [statistics.median(samples[(o, b)]) * 1e3 for b in names]
    row = f"| {o} | " + " | ".join(f"{x:.2f}" for x in m) + " |"
    if len(m) == 2:
        row += f" {m[0] / m[1]:.2f} |"
    print(row)
PY
