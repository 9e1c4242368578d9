// Fuzzes how a language model's text is read and cached (lib/data/token_cache.cpp, lm_stream.cpp):
// input = 2 bytes n (little-endian), n bytes of text, then bytes that overwrite the token cache. The
// text is encoded with a small word vocabulary and cached; the cache is mapped back; then the cache's
// body is replaced by the fuzzed bytes under a header whose key still matches the text (as a disk error
// or another version's file would leave it). Invariants: the mapped cache equals the encoding; a corrupt
// cache is rebuilt or, if mapped, well formed (offsets from 0 rising to the token count, ids inside the
// vocabulary), so flatten_stream and every sentence read stay in bounds. Seeds: tests/fuzz/seeds/lm_text.
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "data/lm_stream.h"
#include "data/token_cache.h"
#include "data/vocab.h"
#include "fuzz_support.h"

namespace {
std::vector<std::vector<int32_t>> sentences(const moe::data::EncodedCorpus& c) {
  std::vector<std::vector<int32_t>> out;
  for (int64_t i = 0; i < c.size(); ++i) out.emplace_back(c.sentence(i).begin(), c.sentence(i).end());
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const std::string vocab_path = moe::fuzz::write_file("lm.vocab", "the\na\ncat\nsat\n.\nder 3\nKatze\n");
  static const moe::data::WordVocab vocab(vocab_path);
  const size_t n = std::min<size_t>(data[0] | (data[1] << 8), size - 2);
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, n);
  const std::string_view body(reinterpret_cast<const char*>(data) + 2 + n, size - 2 - n);
  const std::string text_path = moe::fuzz::write_file("lm.txt", text);
  const std::string dir = moe::fuzz::scratch_dir() + "/cache";
  std::filesystem::create_directories(dir);
  const std::string cache = moe::data::cache_path(text_path, vocab_path, dir);
  std::filesystem::remove(cache);  // a file of the same size and mtime tick would match the old cache
  moe::data::ReadOptions opts;
  opts.skip_invalid_utf8 = true;
  moe::data::EncodedCorpus built;
  if (!moe::fuzz::accepts([&] { built = moe::data::load_or_build_cache(text_path, vocab, vocab_path, dir, opts); },
                          text_path))
    return 0;
  const auto expected = sentences(built);
  bool rebuilt = true;
  const auto mapped = moe::data::load_or_build_cache(text_path, vocab, vocab_path, dir, opts, &rebuilt);
  FUZZ_REQUIRE(!rebuilt && sentences(mapped) == expected, "the mapped cache differs from the encoding");

  // The same header (its key matches the text), a fuzzed body of the size the header's counts need.
  std::string bytes = moe::fuzz::read_file(cache);
  constexpr size_t kHeader = 8 + 4 * 8 + 2 * 8;  // magic, key (size, mtime, vocab hash, flags), lines, tokens
  FUZZ_REQUIRE(bytes.size() >= kHeader, "the cache is shorter than its header");
  int64_t lines = body.size() > 0 ? static_cast<uint8_t>(body[0]) % 16 : 0;
  int64_t tokens = body.size() > 1 ? static_cast<uint8_t>(body[1]) % 64 : 0;
  std::memcpy(bytes.data() + kHeader - 16, &lines, 8);
  std::memcpy(bytes.data() + kHeader - 8, &tokens, 8);
  std::string rest(body.substr(std::min<size_t>(2, body.size())));
  rest.resize(static_cast<size_t>(8 * (lines + 1) + 4 * tokens), '\0');
  bytes.resize(kHeader);
  moe::fuzz::overwrite_file(cache, bytes + rest);
  const auto reread = moe::data::load_or_build_cache(text_path, vocab, vocab_path, dir, opts, &rebuilt);
  if (rebuilt) FUZZ_REQUIRE(sentences(reread) == expected, "the rebuilt cache differs from the encoding");
  int64_t total = 0;
  for (int64_t i = 0; i < reread.size(); ++i) {
    FUZZ_REQUIRE(reread.length(i) >= 0, "a sentence of negative length");
    for (int32_t id : reread.sentence(i)) FUZZ_REQUIRE(id >= 0 && id < vocab.size(), "an id outside the vocabulary");
    total += reread.length(i);
  }
  FUZZ_REQUIRE(total == reread.tokens(), "the sentences do not add up to the token count");
  FUZZ_REQUIRE(moe::data::flatten_stream(reread, vocab.eos_id()).size() == static_cast<size_t>(total + reread.size()),
               "flatten_stream's length");
  return 0;
}
