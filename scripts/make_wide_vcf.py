"""Write a bgzipped-ready VCF of random phased diploid genotypes, fast (numpy).

Usage: make_wide_vcf.py OUT.vcf SAMPLES RECORDS [CONTIGS [MISSING]]
Used by the RSS calibration, memory and convert benchmarks: wide files (>= 20,000
samples) that no shared corpus provides. Allele frequencies vary per site; seeded.
MISSING (default 0): the fraction of calls written `.|.`, as a pVCF's no-calls.
"""
import sys

import numpy as np


def main(out, n_samples, n_records, n_contigs=2, missing=0.0):
    rng = np.random.default_rng(7)
    gts = np.array(["0|0", "0|1", "1|0", "1|1", ".|."])
    with open(out, "w") as f:
        f.write("##fileformat=VCFv4.3\n")
        for c in range(n_contigs):
            f.write(f"##contig=<ID=c{c + 1},length=100000000>\n")
        f.write('##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n')
        f.write("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t")
        f.write("\t".join(f"s{i}" for i in range(n_samples)) + "\n")
        per_contig = -(-n_records // n_contigs)
        for r in range(n_records):
            contig = r // per_contig + 1
            pos = (r % per_contig) * 10 + 1
            p = rng.beta(0.3, 3.0)
            a = rng.random((n_samples, 2)) < p
            idx = a[:, 0] * 2 + a[:, 1]
            if missing > 0:
                idx[rng.random(n_samples) < missing] = 4
            f.write(f"c{contig}\t{pos}\t.\tA\tG\t.\tPASS\t.\tGT\t")
            f.write("\t".join(gts[idx]))
            f.write("\n")


if __name__ == "__main__":
    extra = sys.argv[4:]
    main(
        sys.argv[1],
        int(sys.argv[2]),
        int(sys.argv[3]),
        *([int(extra[0])] if extra else []),
        *([float(extra[1])] if len(extra) > 1 else []),
    )
