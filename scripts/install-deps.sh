#!/usr/bin/env bash
# Installs the Debian packages moe builds and tests with, as listed in third_party/manifest.
#   scripts/install-deps.sh [--with SCOPES]          apt-get install (needs root and a package mirror)
#   scripts/install-deps.sh --check [--with SCOPES]  exit 0 when everything is already present
#   scripts/install-deps.sh --offline [DIR]          unpack the .deb files in DIR (default third_party/debs,
#                                                    made by scripts/bundle-deps.sh) into .deps/, which CMake uses
# Scopes toolchain, build and test always; --with adds others, comma-separated: fuzz (clang, libFuzzer),
# bench (PyTorch, the benchmarks' peer). Versions outside a stanza's Range are reported.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/third_party/manifest.sh"
SCOPES=(toolchain build test)
MODE=install DIR="$ROOT/third_party/debs"
while (( $# )); do
  case "$1" in
    --with) IFS=',' read -ra extra <<<"${2:?--with needs scopes, e.g. --with fuzz}"; SCOPES+=("${extra[@]}"); shift 2 ;;
    --check) MODE=check; shift ;;
    --offline) MODE=offline; [[ -n "${2:-}" && "$2" != --* ]] && { DIR="$2"; shift; }; shift ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done

warn_versions() {
  local problem
  while read -r problem; do echo "install-deps: warning: $problem (third_party/manifest)" >&2
  done < <(manifest_version_problems "${SCOPES[@]}")
}

case "$MODE" in
  check) manifest_check "${SCOPES[@]}" 2>/dev/null ;;
  offline)
    [[ -d "$DIR" ]] || { echo "install-deps: no such folder: $DIR (make it with scripts/bundle-deps.sh $DIR)" >&2; exit 2; }
    shopt -s nullglob; debs=("$DIR"/*.deb)
    (( ${#debs[@]} )) || { echo "install-deps: no .deb files in $DIR (make them with scripts/bundle-deps.sh $DIR)" >&2; exit 2; }
    mkdir -p "$ROOT/.deps"
    for f in "${debs[@]}"; do dpkg -x "$f" "$ROOT/.deps"; done
    # Debian's library symlinks may be absolute; make them point inside the prefix.
    find "$ROOT/.deps" -type l | while read -r l; do
      t="$(readlink "$l")"; if [[ "$t" == /* && -e "$ROOT/.deps$t" ]]; then ln -sfn "$ROOT/.deps$t" "$l"; fi; done
    echo "install-deps: unpacked ${#debs[@]} packages into $ROOT/.deps (the build picks it up)"
    ;;
  install)
    if manifest_check "${SCOPES[@]}" 2>/dev/null; then echo "install-deps: all present (${SCOPES[*]})"; warn_versions; exit 0; fi
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
    mapfile -t packages < <(manifest_words Debian "${SCOPES[@]}")
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}"
    manifest_check "${SCOPES[@]}" || { echo "install-deps: still missing after apt-get install" >&2; exit 1; }
    warn_versions
    ;;
esac
