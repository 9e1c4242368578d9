# Shared helpers for the data-prep scripts (sourced, not run): option parsing, downloads that
# report the URL and the offline alternative, the moe-vocab binary, cleaning filters in awk.
# Each script sets NAME, USAGE and DEFAULT_* before calling parse_common "$@".
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MOE_VOCAB="${MOE_VOCAB:-$REPO_ROOT/build/bin/moe-vocab}"
OUT=""; FROM=""; WORK=""; EXTRA_ARGS=()

log() { echo "[$NAME] $*" >&2; }
die() { echo "[$NAME] error: $*" >&2; exit 1; }

parse_common() {
  while [[ $# -gt 0 ]]; do
    case "$1" in
      -h|--help) echo "$USAGE"; exit 0 ;;
      --out) OUT="$2"; shift 2 ;;
      --from) FROM="$2"; shift 2 ;;
      --work) WORK="$2"; shift 2 ;;
      --moe-vocab) MOE_VOCAB="$2"; shift 2 ;;
      *) EXTRA_ARGS+=("$1"); shift ;;
    esac
  done
  [[ -n "$OUT" ]] || die "give --out DIR (see --help)"
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  if [[ -n "$FROM" ]]; then
    [[ -d "$FROM" ]] || die "--from '$FROM' is not a folder"
    FROM="$(cd "$FROM" && pwd)"
  fi
  WORK="${WORK:-$OUT/.download}"
  [[ -x "$MOE_VOCAB" ]] || die "moe-vocab not found at $MOE_VOCAB: build it (cmake --build build --target moe-vocab) or pass --moe-vocab PATH"
}

# need_file PATH: fails naming the file (for --from folders).
# parse_vocab_size DEFAULT: VOCAB_SIZE from --vocab-size N, the only option of the script's own
# (EXTRA_ARGS, left by parse_common); anything else is an error.
parse_vocab_size() {
  VOCAB_SIZE="$1"
  set -- "${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}"
  while [[ $# -gt 0 ]]; do
    case "$1" in --vocab-size) VOCAB_SIZE="$2"; shift 2 ;; *) die "unknown option $1 (see --help)" ;; esac
  done
}
need_file() { [[ -f "$1" ]] || die "missing input file $1"; }

# fetch URL DEST: downloads with curl or wget; on failure names the URL and the offline route.
fetch() {
  local url="$1" dest="$2"
  [[ -s "$dest" ]] && { log "have $dest"; return 0; }
  mkdir -p "$(dirname "$dest")"
  log "downloading $url"
  if command -v curl >/dev/null; then
    curl -fL --retry 3 -o "$dest.part" "$url" && mv "$dest.part" "$dest" && return 0
  elif command -v wget >/dev/null; then
    wget -q -O "$dest.part" "$url" && mv "$dest.part" "$dest" && return 0
  fi
  rm -f "$dest.part"
  die "download failed: $url
  Offline: fetch that file on a machine with internet access, or run this script with
  --from DIR pointing at local copies${SHARED_NAME:+ (here: ../shared/data/$SHARED_NAME; see its README.md)} (see --help)."
}

# normalize < in > out: strips CR, trailing spaces and control characters except tab; NBSP kept
# (SentencePiece's nmt_nfkc maps it to a space).
normalize() { sed -e 's/\r$//' -e 's/[[:cntrl:]]//g' -e 's/[[:space:]]*$//' ; }

# xml_unescape < in > out: undoes Moses' escaping (&amp; &lt; &gt; &apos; &quot; &#124; &#91; &#93;).
xml_unescape() {
  sed -e 's/&apos;/'"'"'/g' -e 's/&quot;/"/g' -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&#124;/|/g' \
      -e 's/&#91;/[/g' -e 's/&#93;/]/g' -e 's/&amp;/\&/g'
}

# clean_pairs SRC TGT OUTSRC OUTTGT MIN MAX RATIO: Moses clean-corpus-n.perl semantics on
# whitespace words: keep pairs with MIN <= words <= MAX on both sides and ratio <= RATIO.
clean_pairs() {
  paste -d '\t' "$1" "$2" | awk -F '\t' -v min="$5" -v max="$6" -v ratio="$7" -v os="$3" -v ot="$4" '
    NF == 2 { a = split($1, x, " "); b = split($2, y, " ");
      if (a < min || b < min || a > max || b > max) { dropped++; next }
      if (a / b > ratio || b / a > ratio) { dropped++; next }
      print $1 > os; print $2 > ot; kept++; next }
    { dropped++ }
    END { printf "kept %d pairs, dropped %d (length %d-%d, ratio %.2f)\n", kept, dropped, min, max, ratio > "/dev/stderr" }'
}

# sgm_text < file.sgm > text: the <seg> contents of a WMT SGML file, XML-unescaped.
sgm_text() { grep '<seg' | sed -e 's/^[[:space:]]*<seg[^>]*>[[:space:]]*//' -e 's/[[:space:]]*<\/seg>[[:space:]]*$//' | xml_unescape; }

# write_info KEY=VALUE...: provenance of the prepared folder.
write_info() {
  { echo "# written by data-prep/$NAME.sh on $(date -u +%FT%TZ)"; printf '%s\n' "$@"; } > "$OUT/INFO"
}

# count lines of the layout files for the log
report_layout() {
  for f in "$@"; do log "$(wc -l < "$OUT/$f") lines  $OUT/$f"; done
}
