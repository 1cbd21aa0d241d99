"""Print a `bcftools query -f` format that shows every column, INFO and FORMAT field.

Usage: query_format.py FILE   (any file bcftools can read the header of)
"""
import re
import subprocess
import sys


def main(path):
    header = subprocess.run(
        ["bcftools", "view", "-h", path], check=True, capture_output=True, text=True
    ).stdout
    info = re.findall(r"^##INFO=<ID=([^,>]+)", header, re.M)
    fmt = re.findall(r"^##FORMAT=<ID=([^,>]+)", header, re.M)
    parts = ["%CHROM", "%POS", "%ID", "%REF", "%ALT", "%QUAL", "%FILTER"]
    parts += [f"%INFO/{k}" for k in info]
    line = "\t".join(parts)
    if fmt:
        line += "[\t" + ":".join(f"%{k}" for k in fmt) + "]"
    print(line + "\\n", end="")


if __name__ == "__main__":
    main(sys.argv[1])
