#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Plots `prealloc bench --json` (and the populate-vs-clear summary of
# bench-clear.sh) for docs/kernels.md: GB/s per kernel by size on one thread,
# by thread count at the large size, and clear against a fresh populate.
#   plot-kernels.py BENCH_JSON POPULATE_VS_CLEAR_TXT OUT_PNG
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def label(k):
    return "c (glibc memset)" if k == "c" else k


def main():
    bench = json.load(open(sys.argv[1]))
    rows = [l.split() for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")]
    kernels = bench["kernels"]
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.8))

    sizes = [r["size"] / 2**20 for r in bench["single_thread"]]
    for k in kernels:
        ax[0].plot(sizes, [r["gb_per_s"][k] for r in bench["single_thread"]], marker="o",
                   label=label(k))
    auto = [r["gb_per_s"][r["auto"]] for r in bench["single_thread"]]
    ax[0].plot(sizes, auto, "k*", markersize=12, label="auto (built-in rules)")
    llc = bench["cpu"]["llc_bytes"] / 2**20
    ax[0].axvline(llc, color="grey", linestyle=":", label="LLC %g MiB" % llc)
    ax[0].set_xscale("log", base=2)
    ax[0].set_xlabel("MiB cleared (one thread, repeated)")
    ax[0].set_ylabel("GB/s")
    ax[0].set_title("by size, single thread")
    ax[0].legend(fontsize=8)

    threads = [r["threads"] for r in bench["by_threads"]]
    width = 0.8 / len(kernels)
    for i, k in enumerate(kernels):
        ax[1].bar([t + (i - len(kernels) / 2 + 0.5) * width for t in range(len(threads))],
                  [r["gb_per_s"][k] for r in bench["by_threads"]], width, label=label(k))
    ax[1].set_xticks(range(len(threads)))
    ax[1].set_xticklabels([str(t) for t in threads])
    ax[1].set_xlabel("threads (%d MiB)" % (bench["threads_size"] // 2**20))
    ax[1].set_title("by threads, large size")
    ax[1].legend(fontsize=8)

    names = [r[0] for r in rows]
    x = range(len(rows))
    ax[2].bar([i - 0.27 for i in x], [float(r[1]) for r in rows], 0.27, label="fresh populate")
    ax[2].bar([i for i in x], [float(r[2]) for r in rows], 0.27,
              label="prealloc clear (auto: %s)" % (rows[0][4] if rows else "?"))
    ax[2].bar([i + 0.27 for i in x], [float(r[3]) for r in rows], 0.27,
              label="prealloc clear --method c")
    ax[2].set_xticks(list(x))
    ax[2].set_xticklabels(names)
    ax[2].set_ylabel("GB/s")
    ax[2].set_title("clear vs populate, every CPU")
    ax[2].legend(fontsize=8)

    fig.suptitle("%s (family 0x%x model 0x%x), GB/s, median of %d" %
                 (bench["cpu"]["model_name"], bench["cpu"]["family"], bench["cpu"]["model"],
                  bench["repeat"]))
    fig.tight_layout()
    fig.savefig(sys.argv[3], dpi=110)


if __name__ == "__main__":
    main()
