"""Write a VCF whose contigs hold deliberately unequal record counts.

Usage: make_unequal_vcf.py OUT.vcf NAME:COUNT [NAME:COUNT ...]
Every NAME is declared in the header (in the order given, with a length); COUNT may
be 0 for a contig with no records. Four samples, random diploid genotypes, seeded;
every 9th record is multiallelic (three ALTs) and every 13th has a 300 bp REF.
"""
import random
import sys


def main(out, specs):
    rng = random.Random(3)
    contigs = [(n, int(c)) for n, c in (s.split(":") for s in specs)]
    with open(out, "w") as f:
        f.write("##fileformat=VCFv4.3\n")
        for i, (name, _) in enumerate(contigs):
            f.write(f"##contig=<ID={name},length={1000000 * (i + 1)}>\n")
        f.write('##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n')
        f.write("#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ta\tb\tc\td\n")
        for name, count in contigs:
            pos = 0
            for k in range(count):
                pos += rng.randint(1, 100)
                ref, alt, top = "A", "C", 1
                if k % 9 == 8:
                    alt, top = "C,G,T", 3
                if k % 13 == 12:
                    ref = "A" * 300
                gts = "\t".join(f"{rng.randint(0, top)}|{rng.randint(0, top)}" for _ in range(4))
                f.write(f"{name}\t{pos}\t.\t{ref}\t{alt}\t.\tPASS\t.\tGT\t{gts}\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
