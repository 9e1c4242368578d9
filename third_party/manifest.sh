# Reads third_party/manifest for the shell scripts (sourced by scripts/install-deps.sh, scripts/bundle-deps.sh
# and tests/scripts/third_party.sh). A stanza's scope is the first word of its Scope line.
#   manifest_table F1,F2 [SCOPE...]   one tab-separated line per stanza in those scopes (all when none)
#   manifest_field FIELD [SCOPE...]   FIELD's value of every stanza in those scopes that has it, one per line
#   manifest_words FIELD [SCOPE...]   the same, split into words (package lists, file lists)
#   manifest_check [SCOPE...]         exit 0 when every Check file exists under / or .deps/
#   manifest_version_problems [SCOPE...]  one line per installed Debian package outside its stanza's Range
MANIFEST_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MANIFEST="$MANIFEST_ROOT/third_party/manifest"

# One tab-separated line per stanza in SCOPEs: the values of FIELDS (comma-separated names; empty when absent).
manifest_table() {
  local fields="$1"; shift
  awk -v fields="$fields" -v scopes=" $* " '
    BEGIN { n = split(fields, want, ",") }
    function flush(  i, line) {
      if (started && (scopes == "  " || index(scopes, " " scope " "))) {
        line = v[want[1]]; for (i = 2; i <= n; i++) line = line "\t" v[want[i]]; print line }
      delete v; scope = ""; started = 0 }
    /^#/ { next }
    /^[[:space:]]*$/ { flush(); next }
    { key = $0; sub(/:.*/, "", key); val = $0; sub(/^[^:]*:[[:space:]]*/, "", val); v[key] = val; started = 1
      if (key == "Scope") { split(val, w, /[[:space:]]+/); scope = w[1] } }
    END { flush() }' "$MANIFEST"
}

manifest_field() { manifest_table "$@" | sed '/^$/d'; }

manifest_words() { manifest_field "$@" | tr -s ' ' '\n' | sed '/^$/d'; }

manifest_check() {
  local f missing=0
  for f in $(manifest_words Check "$@"); do
    [[ -e /$f || -e $MANIFEST_ROOT/.deps/$f ]] || { echo "manifest: missing /$f" >&2; missing=1; }
  done
  return $missing
}

# Upstream part of a Debian version: 1:1.10.0+ds-0.4 -> 1.10.0
manifest_upstream() { local v="${1#*:}"; v="${v%-*}"; echo "${v%%[+~]*}"; }

# Range is "OP V[, OP V]" with OP one of >= > <= < =; compared with dpkg's version ordering.
manifest_in_range() {
  local version="$1" range="$2" clause op bound
  declare -A dpkg_op=([">="]=ge [">"]=gt ["<="]=le ["<"]=lt ["="]=eq)
  IFS=',' read -ra clauses <<<"$range"
  for clause in "${clauses[@]}"; do
    read -r op bound <<<"$clause"
    [[ -n "${dpkg_op[$op]:-}" ]] || { echo "manifest: bad Range clause '$clause'" >&2; return 2; }
    dpkg --compare-versions "$version" "${dpkg_op[$op]}" "$bound" || return 1
  done
}

manifest_version_problems() {
  local name range debian pkg installed upstream
  while IFS=$'\t' read -r name range debian; do
    pkg="${debian%% *}"
    [[ -n "$pkg" ]] || continue
    installed="$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null)" || continue   # not from dpkg: .deps/ or absent
    upstream="$(manifest_upstream "$installed")"
    manifest_in_range "$upstream" "$range" || echo "$name: $pkg $upstream is outside $range"
  done < <(manifest_table Name,Range,Debian "$@")
}
