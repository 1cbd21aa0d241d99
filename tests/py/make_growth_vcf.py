"""Write a VCF whose data-dependent dimensions grow late in the file.

Usage: make_growth_vcf.py OUT.vcf [N_RECORDS]
The first records are plain biallelic diploid SNPs with small values; later ones bring
more ALT alleles, triploid calls, longer Number=. lists, larger integers, new string
widths and absent-then-present fields, so a streaming writer must re-encode the shard
rows it wrote before each of these appeared. Deterministic (seeded).
"""
import random
import sys

HEADER = """##fileformat=VCFv4.3
##FILTER=<ID=PASS,Description="All filters passed">
##FILTER=<ID=lowq,Description="Low quality">
##contig=<ID=1,length=5000000>
##contig=<ID=2,length=4000000>
##contig=<ID=3>
##INFO=<ID=DP,Number=1,Type=Integer,Description="Depth">
##INFO=<ID=AC,Number=A,Type=Integer,Description="Allele count">
##INFO=<ID=LST,Number=.,Type=Integer,Description="List">
##INFO=<ID=TAG,Number=.,Type=String,Description="Tags">
##INFO=<ID=FL,Number=0,Type=Flag,Description="A flag">
##INFO=<ID=AF,Number=A,Type=Float,Description="Allele frequency">
##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">
##FORMAT=<ID=AD,Number=R,Type=Integer,Description="Allelic depths">
##FORMAT=<ID=DP,Number=1,Type=Integer,Description="Depth">
##FORMAT=<ID=PL,Number=G,Type=Integer,Description="Likelihoods">
##FORMAT=<ID=GP,Number=G,Type=Float,Description="Genotype probabilities">
##FORMAT=<ID=NOTE,Number=.,Type=String,Description="Notes">
"""


def main(out, n):
    rng = random.Random(42)
    samples = [f"S{i:02d}" for i in range(23)]
    lines = [HEADER.rstrip("\n")]
    lines.append("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\t" + "\t".join(samples))
    contig, pos = "1", 0
    for i in range(n):
        if i == n // 2:
            contig, pos = "2", 0
        pos += rng.randint(1, 50)
        late = i > n * 0.6
        n_alt = rng.choice([1, 1, 1, 2, 3]) if late else 1
        ploidy = 3 if late and i % 97 == 0 else 2
        ref = rng.choice("ACGT")
        alts = rng.sample([b for b in "ACGT" if b != ref], min(n_alt, 3))
        n_alleles = 1 + len(alts)
        info = []
        if i % 3:
            info.append(f"DP={rng.randint(0, 100000 if late else 100)}")
        info.append("AC=" + ",".join(str(rng.randint(0, 9)) for _ in alts))
        if i % 5 == 0:
            k = rng.randint(1, 6 if late else 2)
            info.append("LST=" + ",".join(str(rng.choice([-9, -3, 0, 4, 5])) for _ in range(k)))
        if late and i % 7 == 0:
            info.append("TAG=" + ",".join(rng.choice(["x", "yy", "zzz"]) for _ in range(rng.randint(1, 4))))
        if i % 11 == 0:
            info.append("FL")
        info.append("AF=" + ",".join(f"{rng.random():.3f}" for _ in alts))
        fmt = ["GT", "AD", "DP", "PL"]
        if late:
            fmt += ["GP", "NOTE"]
        n_gt = n_alleles * (n_alleles + 1) // 2 if ploidy == 2 else None
        cols = []
        for s in range(len(samples)):
            if rng.random() < 0.05:
                gt = "/".join(["."] * ploidy)
            else:
                sep = "|" if rng.random() < 0.5 else "/"
                gt = sep.join(str(rng.randrange(n_alleles)) for _ in range(ploidy))
            ad = ",".join(str(rng.randint(0, 30)) for _ in range(n_alleles))
            dp = str(rng.randint(0, 300 if late else 60))
            pl = ",".join(str(rng.randint(0, 99)) for _ in range(n_gt)) if n_gt else "."
            vals = [gt, ad, dp, pl]
            if late:
                gp = ",".join(f"{rng.random():.2f}" for _ in range(n_gt)) if n_gt else "."
                note = ",".join(rng.choice(["a", "bb"]) for _ in range(rng.randint(1, 3)))
                vals += [gp, note]
            cols.append(":".join(vals))
        qual = "." if i % 13 == 0 else f"{rng.uniform(0, 100):.1f}"
        flt = "lowq" if qual != "." and float(qual) < 10 else "PASS"
        vid = f"v{i}" if i % 4 else "."
        lines.append(
            "\t".join([contig, str(pos), vid, ref, ",".join(alts), qual, flt, ";".join(info), ":".join(fmt)] + cols)
        )
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3000)
