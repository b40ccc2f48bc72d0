#!/usr/bin/env bash
# Builds Stax and runs the benchmark programs in bench/ side by side (ratios in one run).
#
#   scripts/bench.sh [FILE.stax...]          this checkout's build, every program of bench/
#   BASE=<git rev> scripts/bench.sh [...]    before/after: also builds <rev> (in build-base/),
#                                            runs the two builds' stax_bench alternately per
#                                            program, REPEATS times each (default 5), and
#                                            prints both medians and after/before ratios
# THREADS (default: all cores) and ROUNDS (timed rounds per stax_bench run; default its own)
# are passed to stax_bench. Both builds run the programs of this checkout; a program one of
# them cannot compile shows as unsupported.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build -DSTAX_BUILD_TESTS=OFF

files=("$@")
[ ${#files[@]} -gt 0 ] || files=(bench/*.stax)
args=(--threads "${THREADS:-$(nproc)}")
[ -z "${ROUNDS:-}" ] || args+=(--rounds "$ROUNDS")

if [ -z "${BASE:-}" ]; then
  build/bench/stax_bench "${args[@]}" "${files[@]}"
  exit 0
fi

rev="$(git rev-parse --verify "$BASE^{commit}")"
base="build-base/${rev:0:12}"
if [ ! -x "$base/build/bench/stax_bench" ]; then
  echo "bench: building $BASE (${rev:0:12}) in $base"
  rm -rf "$base/src"
  mkdir -p "$base/src"
  git archive "$rev" | tar -x -C "$base/src"
  # With ccache, files the two revisions share compile once: both trees have the same
  # layout, so relative to CCACHE_BASEDIR their compile commands are the same.
  launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    export CCACHE_BASEDIR="$PWD"
  fi
  cmake -S "$base/src" -B "$base/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSTAX_BUILD_TESTS=OFF "${launcher[@]}" >/dev/null
  cmake --build "$base/build" -j "$(nproc)" --target stax_bench
fi

# The fused run time (us) of one program's row in stax_bench's table (column 3), or the
# reason it did not run.
fused_us() {
  local binary="$1" file="$2" out
  if ! out="$("$binary" "${args[@]}" "$file" 2>&1)"; then
    echo "failed"
    return
  fi
  awk '/^threads / || /^program / || NF == 0 { next }
       $2 == "unsupported:" { print "unsupported"; exit }
       { print $3; exit }' <<<"$out"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

printf '%-24s %14s %14s %12s\n' program "before us" "after us" "after/before"
for file in "${files[@]}"; do
  before=() after=()
  for _ in $(seq "${REPEATS:-5}"); do
    before+=("$(fused_us "$base/build/bench/stax_bench" "$file")")
    after+=("$(fused_us build/bench/stax_bench "$file")")
  done
  b="$(printf '%s\n' "${before[@]}" | grep -E '^[0-9.]+$' | median || true)"
  a="$(printf '%s\n' "${after[@]}" | grep -E '^[0-9.]+$' | median || true)"
  [ "$b" != "-" ] || b="${before[0]}"
  [ "$a" != "-" ] || a="${after[0]}"
  ratio="-"
  if [[ "$b" =~ ^[0-9.]+$ && "$a" =~ ^[0-9.]+$ ]] && [ "$b" != "0" ]; then
    ratio="$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
  fi
  printf '%-24s %14s %14s %12s\n' "$(basename "$file" .stax)" "$b" "$a" "$ratio"
done
