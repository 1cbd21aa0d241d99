"""Draw the README's benchmark charts from the benchmarks' own output.

Usage: python3 scripts/bench_charts.py [BENCH_DIR] [OUT_DIR]
  BENCH_DIR  where scripts/bench_convert.sh and scripts/bench_read.sh left
             convert.tsv and read.tsv (default target/bench)
  OUT_DIR    where the PNGs go (default docs/img): convert.png (wall time and peak
             RSS per input, svar2 beside each peer) and read.png (patches/s per layout).
Needs matplotlib (scripts/setup.sh --bench installs it). A tool that did not finish
within the benchmark's time limit is drawn as a hatched bar at the limit's height
labelled "did not finish".
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# The rows each chart shows, in this order, and how they are labelled.
CONVERT_TOOLS = [
    ("svar2 --threads 2", "svar2"),
    ("bcftools view -Ou", "bcftools view -Ou"),
    ("genoray write vcf -@ 2", "genoray"),
    ("vcf2zarr convert -p 2", "vcf2zarr (bio2zarr)"),
]
READ_TOOLS = ["svar2", "zarrs", "tensorstore futures", "tensorstore batch"]
COLOURS = ["#1f6fb4", "#7f7f7f", "#e08214", "#4dac26"]


def read_tsv(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def label(input_name):
    names = {
        "sim.vcf.gz": "corpus VCF\n1k samples, GT",
        "sim.bcf": "corpus BCF",
        "fmt2000.vcf.gz": "FORMAT-heavy VCF\n2k samples",
        "fmt2000.bcf": "FORMAT-heavy BCF\n2k samples",
        "fmt500.vcf.gz": "FORMAT-heavy VCF\n500 samples",
        "fmt500.bcf": "FORMAT-heavy BCF\n500 samples",
        "w300k.vcf.gz": "300k samples\n3k records",
        "w500k.vcf.gz": "500k samples\n200 records",
    }
    return names.get(input_name, input_name)


def convert_chart(rows, out):
    inputs = list(dict.fromkeys(r["input"] for r in rows))
    by = {(r["input"], r["tool"]): r for r in rows}
    # svar2's bar is its median --threads 2 run (of 1, or 3 with a baseline), as the
    # tables' ratios are.
    for inp in inputs:
        runs = sorted((r for r in rows if r["input"] == inp
                       and (r["tool"] == "svar2 --threads 2"
                            or r["tool"].startswith("svar2 --threads 2 #"))),
                      key=lambda r: float(r["wall_s"]))
        if runs:
            by[(inp, "svar2 --threads 2")] = runs[(len(runs) - 1) // 2]
    fig, axes = plt.subplots(2, 1, figsize=(max(8, 1.5 * len(inputs)), 8), sharex=True)
    width = 0.8 / len(CONVERT_TOOLS)
    for k, (tool, name) in enumerate(CONVERT_TOOLS):
        xs = [i + (k - (len(CONVERT_TOOLS) - 1) / 2) * width for i in range(len(inputs))]
        for ax, col in zip(axes, ("wall_s", "rss_mb")):
            vals, dnf = [], []
            for inp in inputs:
                r = by.get((inp, tool))
                v = r[col] if r else "-"
                vals.append(float(v) if v not in ("-", "") else 0.0)
                dnf.append(r is not None and v == "-")
            bars = ax.bar(xs, vals, width, label=name if col == "wall_s" else None,
                          color=COLOURS[k])
            top = max((float(r[col]) for r in rows if r[col] not in ("-", "")), default=1)
            for b, d in zip(bars, dnf):
                if d and col == "wall_s":
                    b.set_height(top)
                    b.set_hatch("//")
                    b.set_alpha(0.35)
                    ax.text(b.get_x() + b.get_width() / 2, top, "did not\nfinish",
                            ha="center", va="bottom", fontsize=7)
    axes[0].set_ylabel("wall time, s (log)")
    axes[0].set_yscale("log")
    axes[1].set_ylabel("peak RSS, MB (log)")
    axes[1].set_yscale("log")
    axes[1].set_xticks(range(len(inputs)))
    axes[1].set_xticklabels([label(i) for i in inputs], fontsize=8)
    axes[0].legend(fontsize=8, ncol=len(CONVERT_TOOLS))
    axes[0].set_title("VCF/BCF to VCF Zarr: lower is better (2 cores; scripts/bench_convert.sh)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def read_chart(rows, out):
    # The steady state: the longest list per layout.
    longest = {}
    for r in rows:
        longest[r["layout"]] = max(longest.get(r["layout"], 0), int(r["patches"]))
    layouts = list(longest)
    by = {(r["layout"], r["tool"]): float(r["patches_per_s"])
          for r in rows if int(r["patches"]) == longest[r["layout"]]}
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / len(READ_TOOLS)
    for k, tool in enumerate(READ_TOOLS):
        xs = [i + (k - (len(READ_TOOLS) - 1) / 2) * width for i in range(len(layouts))]
        ax.bar(xs, [by.get((lay, tool), 0) for lay in layouts], width, label=tool,
               color=COLOURS[k])
    ax.set_xticks(range(len(layouts)))
    ax.set_xticklabels([f"{lay}\n({longest[lay]} patches)" for lay in layouts], fontsize=8)
    ax.set_ylabel("4096 x 1 patches per second (log)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.set_title("Random genotype patches: higher is better (2 cores; scripts/bench_read.sh)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(bench="target/bench", out="docs/img"):
    os.makedirs(out, exist_ok=True)
    drew = []
    for name, draw in (("convert", convert_chart), ("read", read_chart)):
        src = os.path.join(bench, f"{name}.tsv")
        if not os.path.exists(src):
            print(f"bench_charts: {src} not found (run scripts/bench_{name}.sh first); "
                  f"{name}.png not redrawn", file=sys.stderr)
            continue
        draw(read_tsv(src), os.path.join(out, f"{name}.png"))
        drew.append(os.path.join(out, f"{name}.png"))
    print("\n".join(drew))


if __name__ == "__main__":
    main(*sys.argv[1:])
