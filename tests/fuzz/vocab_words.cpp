// Fuzzes word-list vocabularies (lib/data/vocab.cpp: "token" or "token count" per line, plain or gzip),
// as moe-vocab writes them and recipes name them. Invariants: a bad list is a moe::Error naming the
// file; in an accepted one every listed token encodes to an id whose piece is that token, and encoding
// the list's own text gives ids inside the vocabulary that decode without error. Seeds:
// tests/fuzz/seeds/vocab_words.
#include "data/vocab.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string path = moe::fuzz::write_file("words.vocab", text);
  std::unique_ptr<moe::data::WordVocab> vocab;
  if (!moe::fuzz::accepts([&] { vocab = std::make_unique<moe::data::WordVocab>(path); }, path)) return 0;
  for (int32_t id = 4; id < vocab->size(); ++id) {
    const std::string piece = vocab->piece(id);
    FUZZ_REQUIRE(!piece.empty() && piece.find_first_of(" \t\n") == std::string::npos, "a piece with whitespace");
    FUZZ_REQUIRE(vocab->id_of(piece) == id, "token '" + piece + "' does not encode to its own id");
  }
  const auto ids = vocab->encode(text);
  for (int32_t id : ids) FUZZ_REQUIRE(id >= 0 && id < vocab->size(), "an id outside the vocabulary");
  (void)vocab->decode(ids);
  return 0;
}
