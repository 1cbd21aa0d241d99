# Shared by the benchmark scripts.
# The Python the peers (vcf2zarr, zarr-python) were installed into.
source "$(dirname "${BASH_SOURCE[0]}")/python-env.sh"

# `run NAME OUTPUT CMD...` runs CMD under /usr/bin/time -v and appends
# "name wall_s rss_mb out_bytes" to $work/rows (the caller sets $work; OUTPUT is
# measured with du when it exists).
run() {
  local name=$1 out=$2; shift 2
  rm -rf "$out"
  /usr/bin/time -v -o "$work/time" "$@" >/dev/null 2>"$work/err" || {
    echo "bench: $name failed:" >&2; tail -5 "$work/err" >&2; return 1; }
  local wall rss bytes
  wall=$(awk -F': ' '/Elapsed/ {n=split($2,t,":"); s=0; for(i=1;i<=n;i++) s=s*60+t[i]; print s}' "$work/time")
  rss=$(awk -F': ' '/Maximum resident/ {printf "%.0f", $2/1024}' "$work/time")
  bytes=$( [[ -e $out ]] && du -sb "$out" | cut -f1 || echo 0)
  echo "$name $wall $rss $bytes" >> "$work/rows"
}
