#!/usr/bin/env bash
# Installs the Debian packages moe builds against.
#   scripts/install-deps.sh                 apt-get install (needs root and a package mirror)
#   scripts/install-deps.sh --offline DIR   unpack the .deb files in DIR (made by scripts/bundle-deps.sh)
#                                           into the local prefix .deps/ that the build then uses
#   scripts/install-deps.sh --check         exit 0 when everything is already present
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/deps.list"

have_all() {
  local prefix="$ROOT/.deps"
  for h in yaml-cpp/yaml.h spdlog/spdlog.h CLI/CLI.hpp sentencepiece_processor.h catch2/catch.hpp cblas.h; do
    [[ -e /usr/include/$h || -e /usr/include/x86_64-linux-gnu/$h || -e /usr/include/x86_64-linux-gnu/openblas-pthread/$h \
       || -e $prefix/usr/include/$h || -e $prefix/usr/include/x86_64-linux-gnu/openblas-pthread/$h ]] || return 1
  done
  # SentencePiece's own tools (tests check our models against them); not needed to build.
  command -v spm_encode >/dev/null || [[ -x $prefix/usr/bin/spm_encode ]] || return 1
  # OpenMPI (lib/dist's mpi backend; the tests run under mpirun).
  command -v mpirun >/dev/null || [[ -x $prefix/usr/bin/mpirun ]] || return 1
  [[ -e /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h || -e $prefix/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ]] || return 1
}

case "${1:-}" in
  --check) have_all; exit $? ;;
  --offline)
    DIR="${2:?usage: install-deps.sh --offline DIR}"
    [[ -d "$DIR" ]] || { echo "install-deps: no such folder: $DIR" >&2; exit 2; }
    shopt -s nullglob; debs=("$DIR"/*.deb)
    (( ${#debs[@]} )) || { echo "install-deps: no .deb files in $DIR (make them with scripts/bundle-deps.sh $DIR)" >&2; exit 2; }
    mkdir -p "$ROOT/.deps"
    for f in "${debs[@]}"; do dpkg -x "$f" "$ROOT/.deps"; done
    # Debian's library symlinks may be absolute; make them point inside the prefix.
    find "$ROOT/.deps" -type l | while read -r l; do
      t="$(readlink "$l")"; [[ "$t" == /* && -e "$ROOT/.deps$t" ]] && ln -sfn "$ROOT/.deps$t" "$l"; done
    echo "install-deps: unpacked ${#debs[@]} packages into $ROOT/.deps (the build picks it up)"
    ;;
  "")
    if have_all; then echo "install-deps: all present"; exit 0; fi
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${DEV_PACKAGES[@]}"
    ;;
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "install-deps: unknown option $1 (try --help)" >&2; exit 2 ;;
esac
