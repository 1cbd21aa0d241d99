"""Write a FORMAT-heavy VCF like a joint-called cohort (GATK, DeepVariant, DRAGEN,
biobank pVCFs): every sample carries GT plus per-sample fields, fast (numpy), seeded.

Usage: make_format_vcf.py OUT.vcf SAMPLES RECORDS [FORMAT] [CONTIGS]
FORMAT is a colon-separated list drawn from GT, AD, DP, GQ, PL, VAF, PS, FT
(default GT:AD:DP:GQ:PL). About 10 % of sites are multiallelic (2 ALTs: AD and VAF
grow, PL has 6 values), about 2 % of calls are missing (`./.` and `.` values), and
INFO carries AC, AN, AF and DP, as a joint caller writes them. Used by the convert and
memory benchmarks and the RSS calibration: the shared corpus is GT-only.
"""
import sys

import numpy as np

DEFS = {
    "GT": '##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">',
    "AD": '##FORMAT=<ID=AD,Number=R,Type=Integer,Description="Allelic depths">',
    "DP": '##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Read depth">',
    "GQ": '##FORMAT=<ID=GQ,Number=1,Type=Integer,Description="Genotype quality">',
    "PL": '##FORMAT=<ID=PL,Number=G,Type=Integer,Description="Phred-scaled likelihoods">',
    "VAF": '##FORMAT=<ID=VAF,Number=A,Type=Float,Description="Variant allele fractions">',
    "PS": '##FORMAT=<ID=PS,Number=1,Type=Integer,Description="Phase set">',
    "FT": '##FORMAT=<ID=FT,Number=1,Type=String,Description="Sample filter">',
}


def ints(a):
    return a.astype(str)


def main(out, n_samples, n_records, fmt="GT:AD:DP:GQ:PL", n_contigs=2):
    keys = fmt.split(":")
    for k in keys:
        if k not in DEFS:
            sys.exit(f"unknown FORMAT key {k}; known: {', '.join(DEFS)}")
    rng = np.random.default_rng(11)
    gts = np.array(["0/0", "0/1", "1/1", "0/2", "1/2", "2/2", "./."])
    with open(out, "w") as f:
        f.write("##fileformat=VCFv4.3\n")
        for c in range(n_contigs):
            f.write(f"##contig=<ID=c{c + 1},length=100000000>\n")
        f.write('##FILTER=<ID=PASS,Description="All filters passed">\n')
        f.write('##INFO=<ID=AC,Number=A,Type=Integer,Description="Allele count">\n')
        f.write('##INFO=<ID=AN,Number=1,Type=Integer,Description="Allele number">\n')
        f.write('##INFO=<ID=AF,Number=A,Type=Float,Description="Allele frequency">\n')
        f.write('##INFO=<ID=DP,Number=1,Type=Integer,Description="Total depth">\n')
        for k in keys:
            f.write(DEFS[k] + "\n")
        f.write("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t")
        f.write("\t".join(f"s{i}" for i in range(n_samples)) + "\n")
        per_contig = -(-n_records // n_contigs)
        for r in range(n_records):
            contig = r // per_contig + 1
            pos = (r % per_contig) * 37 + 1
            multi = rng.random() < 0.1
            n_alt = 2 if multi else 1
            p = rng.beta(0.4, 3.0)
            g = (rng.random((n_samples, 2)) < p).sum(axis=1)  # 0, 1, 2 copies
            if multi:
                second = rng.random(n_samples) < 0.2
                code = np.where(second, np.array([3, 4, 5])[g], g)
            else:
                code = g
            missing = rng.random(n_samples) < 0.02
            code = np.where(missing, 6, code)
            dp = rng.poisson(30, n_samples)
            cols = []
            for k in keys:
                if k == "GT":
                    cols.append(gts[code])
                elif k == "AD":
                    alt = rng.binomial(dp, np.where(g == 0, 0.02, np.where(g == 1, 0.5, 0.98)))
                    parts = [ints(dp - alt), ints(alt)]
                    if multi:
                        parts.append(ints(rng.binomial(2, 0.1, n_samples)))
                    v = parts[0]
                    for x in parts[1:]:
                        v = np.char.add(np.char.add(v, ","), x)
                    cols.append(np.where(missing, ".", v))
                elif k == "DP":
                    cols.append(np.where(missing, ".", ints(dp)))
                elif k == "GQ":
                    cols.append(np.where(missing, ".", ints(rng.integers(0, 99, n_samples))))
                elif k == "PL":
                    n_pl = 6 if multi else 3
                    pl = rng.integers(0, 900, (n_samples, n_pl))
                    pl[np.arange(n_samples), np.minimum(code, n_pl - 1)] = 0
                    v = ints(pl[:, 0])
                    for j in range(1, n_pl):
                        v = np.char.add(np.char.add(v, ","), ints(pl[:, j]))
                    cols.append(np.where(missing, ".", v))
                elif k == "VAF":
                    vaf = np.round(rng.random((n_samples, n_alt)), 3).astype(str)
                    v = vaf[:, 0]
                    for j in range(1, n_alt):
                        v = np.char.add(np.char.add(v, ","), vaf[:, j])
                    cols.append(np.where(missing, ".", v))
                elif k == "PS":
                    # A phase set is a position: at least 1 (VCF Zarr keeps -1 and -2 for
                    # missing and fill, and svar2 refuses them as values).
                    cols.append(np.where(rng.random(n_samples) < 0.5, ".", ints(np.maximum(1, pos - rng.integers(0, 500, n_samples)))))
                elif k == "FT":
                    cols.append(np.where(rng.random(n_samples) < 0.05, "LowQual", "PASS"))
            calls = cols[0]
            for c in cols[1:]:
                calls = np.char.add(np.char.add(calls, ":"), c)
            ac = [int(((code == 1) | (code == 4)).sum() + 2 * (code == 2).sum())]
            if multi:
                ac.append(int((code >= 3).sum()))
            an = 2 * int((~missing).sum())
            af = ",".join(f"{a / max(an, 1):.4g}" for a in ac)
            alt = "G,T" if multi else "G"
            info = f"AC={','.join(map(str, ac))};AN={an};AF={af};DP={int(dp.sum())}"
            f.write(f"c{contig}\t{pos}\t.\tA\t{alt}\t{rng.integers(20, 900)}\tPASS\t{info}\t{fmt}\t")
            f.write("\t".join(calls))
            f.write("\n")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], int(a[1]), int(a[2]), *(a[3:4]), *(int(x) for x in a[4:5]))
