#!/usr/bin/env bash
# The layers of lib/ are enforced by the build (cmake/layers.cmake): a source sees only the include views
# of its own layer and of the layers below it. This compiles small probe files with the exact flags the
# build gives one file of a layer (compile_commands.json) and checks that an include of a lower layer
# compiles while an include of a higher (or undeclared) layer fails with "No such file". Run by ctest
# (args: bin dir, data dir); needs the build folder's compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$(cd "$1/.." && pwd)"
DB="$BUILD/compile_commands.json"
[[ -f "$DB" ]] || { echo "layering: no $DB"; exit 1; }
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
fail=0

# The compile command of lib/<layer>/<file> with its source replaced by a probe including "$2".
probe() {  # probe LAYER_FILE HEADER -> compiler status
  local file="$1" header="$2"
  python3 - "$DB" "$ROOT/lib/$file" "$TMP/probe.cpp" "$header" > "$TMP/cmd" <<'PY'
import json, shlex, sys
db, src, probe, header = sys.argv[1:5]
open(probe, "w").write('#include "%s"\nint main() { return 0; }\n' % header)
for e in json.load(open(db)):
    if e["file"] == src:
        args = shlex.split(e["command"])
        out = [a for i, a in enumerate(args) if a not in ("-o", "-c") and (i == 0 or args[i - 1] != "-o")]
        out = [probe if a == src else a for a in out]
        print("cd " + shlex.quote(e["directory"]) + " && " + " ".join(shlex.quote(a) for a in out + ["-fsyntax-only"]))
        break
else:
    sys.exit("layering: %s is not in the compile database" % src)
PY
  [[ -s "$TMP/cmd" ]] || { echo "layering: no compile command for lib/$file"; exit 1; }
  bash "$TMP/cmd" > "$TMP/out" 2>&1
}

expect() {  # expect ok|fail LAYER_FILE HEADER
  local want="$1" file="$2" header="$3" got=ok
  probe "$file" "$header" || got=fail
  if [[ "$want" == fail && "$got" == fail ]] && ! grep -q "No such file" "$TMP/out"; then got=other; fi
  if [[ "$got" != "$want" ]]; then
    echo "layering: lib/$file including \"$header\": expected $want, got $got"; sed -n 1,5p "$TMP/out"; fail=1
  fi
}

expect ok   common/error.cpp      common/json.h
expect fail common/error.cpp      tensor/tensor.h           # common is the bottom layer
expect ok   graph/graph.cpp       ops/unary.h
expect fail graph/graph.cpp       layers/builder.h          # graph sits below layers
expect fail ops/unary.cpp         graph/graph.h
expect ok   layers/basic.cpp      dist/communicator.h
expect fail layers/basic.cpp      models/model.h
expect ok   models/checkpoint.cpp data/vocab.h
expect fail models/checkpoint.cpp training/trainer.h
expect fail training/trainer.cpp  translator/translator.h   # BLEU validation decodes through a callback
expect fail translator/translator.cpp training/trainer.h    # nor does the translator reach into training
expect ok   training/trainer.cpp  models/checkpoint.h
expect fail data/vocab.cpp        graph/graph.h             # data links only tensor
expect ok   serving/worker.cpp    translator/translator.h   # moe-serve's machinery sits on the translator
expect fail translator/translator.cpp serving/request.h     # which knows nothing of serving
(( fail == 0 )) && echo "layering: lower-layer includes compile, upward ones fail to build"
exit $fail
