// Our SentencePiece models are standard model files: the reference command-line tools of the
// SentencePiece project (spm_encode / spm_decode / spm_export_vocab, Debian package `sentencepiece`,
// the same C++ library the Python package wraps) load them, see our special ids (<pad>=0 <unk>=1
// <s>=2 </s>=3), produce exactly the ids our Vocab produces for real Multi30k text, and decode them back.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "data/vocab.h"
#include "data/vocab_builder.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;

namespace {
std::string run(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  REQUIRE(pclose(p) == 0);
  return out;
}

/// The tools' folder prefix: on PATH, or unpacked by scripts/install-deps.sh --offline into .deps/.
std::string tools() {
  if (std::system("command -v spm_encode >/dev/null 2>&1") == 0) return "";
  const std::string offline = std::string(MOE_SOURCE_DIR) + "/.deps/usr/bin/";
  REQUIRE(std::filesystem::exists(offline + "spm_encode"));  // scripts/deps.list installs it
  return offline;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}
}  // namespace

TEST_CASE("spm: models load in SentencePiece's own tools with the same ids", "[data][spm]") {
  if (!test::have_shared("multi30k/train.de")) {
    WARN("no shared data: skipped");
    return;
  }
  const std::string bin = tools();
  const auto dir = test::temp_dir("spm_compat");
  std::ifstream in(test::shared("multi30k/train.de"));
  std::string text, line;
  for (int i = 0; i < 400 && std::getline(in, line); ++i) text += line + "\n";
  const std::string corpus = test::write_file(dir + "/train.de", text);
  SpmTrainOptions o;
  o.inputs = {corpus};
  o.output = dir + "/vocab.spm";
  o.vocab_size = 500;
  train_sentencepiece(o);

  const auto vocab = lines_of(run(bin + "spm_export_vocab --model " + o.output));
  REQUIRE(vocab.size() == 500);
  CHECK(vocab[0].rfind("<pad>\t", 0) == 0);
  CHECK(vocab[1].rfind("<unk>\t", 0) == 0);
  CHECK(vocab[2].rfind("<s>\t", 0) == 0);
  CHECK(vocab[3].rfind("</s>\t", 0) == 0);

  SentencePieceVocab ours(o.output);
  const auto theirs = lines_of(run(bin + "spm_encode --model " + o.output + " --output_format=id < " + corpus));
  const auto sentences = lines_of(text);
  REQUIRE(theirs.size() == sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i) {
    std::string ids;
    for (int32_t id : ours.encode(sentences[i])) ids += (ids.empty() ? "" : " ") + std::to_string(id);
    INFO("line " << i + 1 << ": " << sentences[i]);
    REQUIRE(ids == theirs[i]);
  }
  const std::string ids_file =
      test::write_file(dir + "/ids", run(bin + "spm_encode --model " + o.output + " --output_format=id < " + corpus));
  const auto decoded = lines_of(run(bin + "spm_decode --model " + o.output + " --input_format=id < " + ids_file));
  REQUIRE(decoded.size() == sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i) CHECK(decoded[i] == ours.decode(ours.encode(sentences[i])));
}
