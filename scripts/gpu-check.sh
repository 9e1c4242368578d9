#!/usr/bin/env bash
# The one command of a lent GPU's first call (docs/GPU-FIRST-RUN.md), and its rehearsal in CI:
#   scripts/gpu-check.sh OUT [--pack DIR] [--budget SECONDS] [--steps LIST] [--tags T1;T2] [--tools LIST]
#                        [--models LIST] [--serve-model CKPT] [--study-from PATH] [--study-seconds S]
#                        [--study-seeds LIST] [--study-models LIST]
#       on the device, carrying gpu-pack/ (scripts/gpu-pack.sh): unpacks it, checks what it relies on,
#       then runs the steps
#   scripts/gpu-check.sh --emulate OUT [--bin DIR] [--data DIR] [--budget SECONDS] [--steps LIST]
#       the same steps at tiny sizes on the CUDA emulator (emu/), with the programs of an emulator build
# Steps, most important first (LIST: a comma list of them; default all):
#   env       driver, GPU, CUDA, cuBLAS, NCCL, PyTorch, compute-sanitizer
#   ptx       the tensor-core and asynchronous instructions (mma.sync, ldmatrix, cp.async, wgmma, TMA,
#             mbarriers) against the PTX ISA's layouts: the emulator's layouts are the hardware's
#   parity    the whole GPU parity suite (MOE_REQUIRE_GPU=1) and the moe kernels it never launched
#   sanitize  compute-sanitizer memcheck and racecheck, tag by tag: sort, topk, attention, grouped GEMM,
#             MoE gating and dispatch (emulated: two quick tags under the emulator's own checker);
#             --tags '[softmax];[reduce]' and --tools memcheck,synccheck,initcheck choose others
#   e2e       moe-train on cuda:0: Transformer, MoE FFN, MoA, MAE-7 and an LSTM-MoE LM, each against
#             its CPU losses for the first updates, then a few hundred updates, beam-5 decoding and
#             BLEU (the LM: perplexity); --models picks some (a comma list)
#   nccl      the NCCL communicator on one rank
#   bench     headline moe-bench rows beside the measured ceilings, and transformer-base training
#             tokens/s beside scripts/bench_torch.py (eager and torch.compile)
#   serve     moe-serve on cuda:0 under 1, 4 and 16 clients, batched and one request at a time
#             (scripts/bench-serve.sh, beam 5, bf16), with --serve-model or else the e2e step's Transformer
#   study     scripts/study.sh's GPU grid (--tasks gpu): Multi30k at the full recipe's size, six models, each
#             trained --study-seconds (default 60) and its equal-updates twin, beam-5 BLEU and chrF, as many
#             cells as the budget holds, seed by seed (--study-seeds, default 1,2,3); the cells in --study-from
#             (an earlier call's study.tar.gz or a folder with cells/; default docs/results-gpu/study.tar.gz)
#             are not run again. OUT/study.tar.gz holds them all (carried ones too) without checkpoints.
# A step that would overrun the budget (default 450 s, from the start) is skipped and says so; one that
# runs out of its own share (scaled with the budget) is stopped; the study step takes all that is left. OUT ends with
# summary.md (a table, printed last), logs.tar.gz (every log) and, when the study step ran, study.tar.gz.
# Exit code 0 when no step failed.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
START=$SECONDS
usage() { sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; }
OUT=""; PACK="$ROOT/gpu-pack"; BUDGET=450; EMULATE=0; BIN="$ROOT/build/bin"; DATA="$ROOT/../shared/data"
STEPS="env,ptx,parity,sanitize,e2e,nccl,bench,serve,study" SERVE_MODEL="" SAN_TAGS="" SAN_TOOLS="" E2E_MODELS="transformer moe-ffn moa mae-7 lstm-moe-lm"
STUDY_FROM="$ROOT/docs/results-gpu/study.tar.gz" STUDY_SECONDS="" STUDY_SEEDS="1,2,3" STUDY_MODELS=""
while (( $# )); do
  case "$1" in
    --pack) PACK="$2"; shift 2 ;;
    --budget) BUDGET="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --tags) SAN_TAGS="$2"; shift 2 ;;
    --tools) SAN_TOOLS="$2"; shift 2 ;;
    --models) E2E_MODELS="${2//,/ }"; shift 2 ;;
    --serve-model) SERVE_MODEL="$(realpath "$2")"; shift 2 ;;
    --study-from) STUDY_FROM="$(realpath "$2")"; shift 2 ;;
    --study-seconds) STUDY_SECONDS="$2"; shift 2 ;;
    --study-seeds) STUDY_SEEDS="$2"; shift 2 ;;
    --study-models) STUDY_MODELS="$2"; shift 2 ;;
    --emulate) EMULATE=1; shift ;;
    --bin) BIN="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "gpu-check: unknown option $1 (try --help)" >&2; exit 2 ;;
    *) [[ -z "$OUT" ]] || { echo "gpu-check: one output folder only (got $OUT and $1)" >&2; exit 2; }; OUT="$1"; shift ;;
  esac
done
[[ -n "$OUT" ]] || { usage >&2; exit 2; }
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
rm -rf "$OUT/logs" "$OUT/summary.md" "$OUT/logs.tar.gz" "$OUT/study.tar.gz"
LOGS="$OUT/logs"
mkdir -p "$LOGS"
DEADLINE=$(( START + BUDGET ))
source "$ROOT/scripts/internal/gpu-check-steps.sh"

if (( EMULATE )); then preflight_emulated; else preflight_device; fi
preflight_rc=$?
if (( preflight_rc == 0 )); then
  IFS=, read -ra chosen <<< "$STEPS"
  for step in env ptx parity sanitize e2e nccl bench serve study; do
    [[ ",$STEPS," == *",$step,"* ]] || continue
    case "$step" in  # the least time each needs to be worth starting, and the most it may take (at 450 s)
      env) run_step env 10 "$(scaled 30)" step_env ;;
      ptx) run_step ptx 10 "$(scaled 30)" step_ptx ;;
      parity) run_step parity 40 "$(scaled 200)" step_parity ;;
      sanitize) run_step sanitize 30 "$(scaled 150)" step_sanitize ;;
      e2e) run_step e2e 40 "$(scaled 240)" step_e2e ;;
      nccl) run_step nccl 10 "$(scaled 40)" step_nccl ;;
      bench) run_step bench 40 "$(scaled 150)" step_bench ;;
      serve) run_step serve 30 "$(scaled 120)" step_serve ;;
      study) run_step study $(( STUDY_SECONDS + 60 )) $(( DEADLINE - SECONDS )) step_study ;;
    esac
  done
  for step in "${chosen[@]}"; do
    [[ ",env,ptx,parity,sanitize,e2e,nccl,bench,serve,study," == *",$step,"* ]] || add_row "$step" "FAILED" 0 "no such step"
  done
fi
write_summary "$preflight_rc"
tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs && rm -rf "$LOGS"
cat "$OUT/summary.md"
! grep -qE '\| (FAILED|TIMED OUT) \|' "$OUT/summary.md" && (( preflight_rc == 0 ))
