"""Print a VCF as a VCF Zarr store keeps it: INFO keys in header order, and GT written
out as missing where a record does not give it.

A store keeps each INFO field in its own array, so `svar2 view` prints them in the
header's order, not the record's. It keeps an absent GT (a record whose FORMAT leaves
GT out, or whose samples stop before it) as missing alleles, exactly as an explicit
`./.`, so `svar2 view` prints missing calls of the store's ploidy (`./.`, or `././.`
where the file's widest call has three alleles): what bcftools prints for those
values. This puts the input in that same form, so the two can be compared.

Usage: as_stored.py FILE   (any file `bcftools view` reads); VCF on stdout.
"""
import subprocess
import sys


def main(path):
    text = subprocess.run(
        ["bcftools", "view", path], check=True, capture_output=True, text=True
    ).stdout
    lines = text.splitlines()
    has_gt = any(l.startswith("##FORMAT=<ID=GT,") for l in lines)
    ploidy = 1
    records = [l.split("\t") for l in lines if not l.startswith("#")]
    for f in records:
        keys = f[8].split(":") if len(f) > 8 else []
        if "GT" in keys:
            i = keys.index("GT")
            for s in f[9:]:
                parts = s.split(":")
                if i < len(parts):
                    ploidy = max(ploidy, parts[i].count("/") + parts[i].count("|") + 1)
    missing = "/".join(["."] * ploidy)
    info_order = {}
    for l in lines:
        if l.startswith("##INFO=<ID="):
            info_order.setdefault(l[len("##INFO=<ID=") :].split(",")[0], len(info_order))
    out = [l for l in lines if l.startswith("#")]
    for f in records:
        if len(f) > 7 and f[7] != ".":
            keys = f[7].split(";")
            f[7] = ";".join(sorted(keys, key=lambda k: info_order.get(k.split("=")[0], 1 << 30)))
        if has_gt and len(f) > 9:
            keys = f[8].split(":")
            if "GT" not in keys:
                f[8] = "GT:" + f[8] if f[8] != "." else "GT"
                f[9:] = [missing + ":" + s if s != "." else missing for s in f[9:]]
            else:
                # A sample that stops before GT gives none: written out as missing.
                i = keys.index("GT")
                for k, s in enumerate(f[9:], start=9):
                    parts = s.split(":")
                    if i >= len(parts):
                        parts += ["."] * (i - len(parts)) + [missing]
                        f[k] = ":".join(parts)
        out.append("\t".join(f))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
