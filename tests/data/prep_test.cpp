// data-prep/multi30k.sh --from the shared Multi30k copy: the layout (train/valid/test .src/.tgt with
// 29,000 / 1,014 / 1,000 aligned lines), a joint 8k SentencePiece vocabulary with our reserved ids,
// and --help. Needs build/bin/moe-vocab (skipped with a warning when it is not built).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

#include "data/corpus.h"
#include "data/vocab.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;

TEST_CASE("data-prep: multi30k.sh --from the shared copy", "[data][prep]") {
  const std::string vocab_bin = std::string(MOE_BIN_DIR) + "/moe-vocab";
  if (!test::have_shared("multi30k/train.en") || !std::filesystem::exists(vocab_bin)) {
    WARN("no shared data or no moe-vocab binary: skipped");
    return;
  }
  const std::string script = std::string(MOE_SOURCE_DIR) + "/data-prep/multi30k.sh";
  CHECK(std::system((script + " --help > /dev/null").c_str()) == 0);
  const auto out = test::temp_dir("prep");
  const std::string cmd = script + " --from " + test::shared("multi30k") + " --out " + out + " --moe-vocab " +
                          vocab_bin + " > " + out + "/log.txt 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  for (auto [split, n] : {std::pair{"train", 29000}, {"valid", 1014}, {"test", 1000}}) {
    const auto p = read_parallel(out + "/" + split + ".src", out + "/" + split + ".tgt");
    CHECK(static_cast<int>(p.src.size()) == n);
  }
  CHECK(read_lines(out + "/train.src")[0] == read_lines(test::shared("multi30k/train.en"))[0]);
  SentencePieceVocab v(out + "/vocab.spm");
  CHECK(v.size() == 8000);
  CHECK((v.pad_id() == 0 && v.unk_id() == 1 && v.bos_id() == 2 && v.eos_id() == 3));
  CHECK(v.decode(v.encode("Zwei Hunde spielen im Schnee.")) == "Zwei Hunde spielen im Schnee.");
  // a bad --from names the missing file
  const std::string bad = script + " --from " + out + " --out " + out + "/x --moe-vocab " + vocab_bin + " 2> " + out + "/err.txt";
  CHECK(std::system(bad.c_str()) != 0);
  CHECK(read_lines(out + "/err.txt").back().find("train.en") != std::string::npos);
}
