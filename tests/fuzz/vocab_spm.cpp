// Fuzzes SentencePiece model files as moe loads them (lib/data/vocab.cpp, SentencePieceVocab: the
// library's protobuf model, then moe's checks of the pad/bos/eos pieces). Invariants: a bad model is a
// moe::Error naming the file; an accepted model encodes text (ASCII, German, CJK, invalid bytes) to ids
// inside the vocabulary that decode without error. Seeds: tests/fuzz/seeds/vocab_spm (a model of 60
// pieces trained by spm_train on a few sentences).
#include "data/vocab.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = moe::fuzz::write_file("fuzz.model", {reinterpret_cast<const char*>(data), size});
  std::unique_ptr<moe::data::Vocab> vocab;
  if (!moe::fuzz::accepts([&] { vocab = moe::data::load_vocab(path); }, path)) return 0;
  for (const char* text : {"a small cat sat on the mat.", "Eine kleine Katze saß auf der Matte.", "小猫坐在垫子上",
                           "bad \xff\xfe bytes", ""}) {
    const auto ids = vocab->encode(text);
    for (int32_t id : ids) FUZZ_REQUIRE(id >= 0 && id < vocab->size(), "an id outside the vocabulary");
    (void)vocab->decode(ids);
  }
  return 0;
}
