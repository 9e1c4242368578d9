#!/usr/bin/env bash
# Downloads the .deb files of moe's dependencies into DIR, for machines without package access:
#   scripts/bundle-deps.sh DIR           (on a Debian 12 machine with a package mirror)
#   then, on the offline machine:  scripts/install-deps.sh --offline DIR && scripts/test.sh --no-install
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/deps.list"
DIR="${1:-}"
if [[ -z "$DIR" || "$DIR" == -h || "$DIR" == --help ]]; then sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
mkdir -p "$DIR"
cd "$DIR"
apt-get download "${OFFLINE_PACKAGES[@]}"
echo "bundle-deps: $(ls -1 *.deb | wc -l) packages in $(pwd)"
