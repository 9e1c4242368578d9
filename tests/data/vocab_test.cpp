// Vocabularies: word files (both formats, reserved ids, <unk>/</S> aliases), word counting with a
// threshold, SentencePiece training through the linked library (reserved ids, round trips on
// Multi30k, joint vocabulary) and load_vocab. Tests lib/data/vocab*.cpp.
#include "data/vocab.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/error.h"
#include "data/corpus.h"
#include "data/vocab_builder.h"
#include "data_test_util.h"

using namespace moe;
using namespace moe::data;
using Catch::Matchers::Contains;

TEST_CASE("vocab: word vocabulary files and encoding", "[data]") {
  const auto dir = test::temp_dir("wordvocab");
  WordVocab v(test::write_file(dir + "/v.txt", "the 10\ncat 5\n<unk> 3\nsat\n"));
  CHECK(v.size() == 7);  // <pad> <unk> <s> </s> the cat sat
  CHECK(v.piece(0) == "<pad>");
  CHECK(v.piece(3) == "</s>");
  CHECK(v.id_of("the") == 4);
  CHECK(v.id_of("sat") == 6);
  CHECK(v.id_of("<unk>") == kUnkId);
  CHECK(v.encode("  the cat\tsat on </S> <UNK> ") == std::vector<int32_t>{4, 5, 6, kUnkId, kEosId, kUnkId});
  CHECK(v.encode("").empty());
  CHECK(v.decode({kBosId, 4, 5, kUnkId, kEosId, kPadId}) == "the cat <unk>");
  CHECK_THROWS_WITH(WordVocab(test::write_file(dir + "/bad.txt", "the 10\ncat five\n")),
                    Contains("bad.txt") && Contains("line 2"));
  CHECK_THROWS_WITH(v.piece(7), Contains("id 7"));
  // Blanks after a token are no count (they threw std::out_of_range; found by tests/fuzz/vocab_words.cpp).
  CHECK(WordVocab(test::write_file(dir + "/blanks.txt", "the \ncat\t\t\nsat 3 \n")).size() == 7);
  CHECK(dynamic_cast<WordVocab*>(load_vocab(dir + "/v.txt").get()) != nullptr);
}

TEST_CASE("vocab: build_word_vocab counts words with a threshold", "[data]") {
  const auto dir = test::temp_dir("buildword");
  const auto in = test::write_gz(dir + "/c.txt.gz", "b a b\nc b a <unk>\n\n d \n");
  const auto n = build_word_vocab({{in}, dir + "/v.txt", 2, 0});
  CHECK(n == 2);
  CHECK(read_lines(dir + "/v.txt") == std::vector<std::string>{"b 3", "a 2"});
  build_word_vocab({{in}, dir + "/all.txt", 1, 3});
  CHECK(read_lines(dir + "/all.txt") == std::vector<std::string>{"b 3", "a 2", "c 1"});
  WordVocab v(dir + "/all.txt");
  CHECK(v.encode("a d") == std::vector<int32_t>{5, kUnkId});
}

namespace {
std::string collapse_spaces(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}
}  // namespace

TEST_CASE("vocab: SentencePiece training, reserved ids, round trips on Multi30k", "[data][spm]") {
  if (!test::have_shared("multi30k/train.en")) {
    WARN("no shared data: skipped");
    return;
  }
  const auto dir = test::temp_dir("spm");
  for (const std::string type : {"bpe", "unigram"}) {
    SpmTrainOptions o;
    o.inputs = {test::shared("multi30k/train.en"), test::shared("multi30k/train.de")};
    o.output = dir + "/joint." + type + ".spm";
    o.vocab_size = 2000;
    o.model_type = type;
    o.input_sentence_size = 20000;
    train_sentencepiece(o);
    REQUIRE(std::filesystem::exists(o.output));
    auto v = load_vocab(o.output);
    CHECK(dynamic_cast<SentencePieceVocab*>(v.get()) != nullptr);
    CHECK(v->size() == 2000);
    CHECK(v->piece(0) == "<pad>");
    CHECK(v->piece(1) == "<unk>");
    CHECK(v->piece(2) == "<s>");
    CHECK(v->piece(3) == "</s>");
    CHECK((v->pad_id() == 0 && v->unk_id() == 1 && v->bos_id() == 2 && v->eos_id() == 3));
    // decode(encode(x)) == x for text already in nmt_nfkc form (single spaces, no NBSP).
    int checked = 0;
    for (const auto& f : {"multi30k/val.en", "multi30k/val.de"}) {
      for (const auto& line : read_lines(test::shared(f))) {
        const auto ids = v->encode(line);
        CHECK(std::find(ids.begin(), ids.end(), kUnkId) == ids.end());
        if (collapse_spaces(line) != line || line.find("\xC2\xA0") != std::string::npos) continue;
        CHECK(v->decode(ids) == line);
        ++checked;
      }
    }
    CHECK(checked > 1900);
    // The normalisation used: NBSP becomes a space, runs of spaces collapse.
    CHECK(v->decode(v->encode("  Ein  Mann\xC2\xA0läuft. ")) == "Ein Mann läuft.");
    // Specials are dropped by decode.
    auto ids = v->encode("A dog runs.");
    ids.insert(ids.begin(), kBosId);
    ids.push_back(kEosId);
    ids.push_back(kPadId);
    CHECK(v->decode(ids) == "A dog runs.");
  }
  SpmTrainOptions bad;
  bad.inputs = {dir + "/none.txt"};
  bad.output = dir + "/x.spm";
  CHECK_THROWS_WITH(train_sentencepiece(bad), Contains("none.txt"));
  CHECK_THROWS_WITH(SentencePieceVocab(dir + "/missing.spm"), Contains("missing.spm"));
}

TEST_CASE("vocab: identity-normalised SentencePiece keeps NBSP exactly", "[data][spm]") {
  const auto dir = test::temp_dir("spm_id");
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += "Zeile " + std::to_string(i) + " mit\xC2\xA0geschütztem Leerzeichen und Wörtern wie Straße.\n";
  SpmTrainOptions o;
  o.inputs = {test::write_gz(dir + "/t.txt.gz", text)};
  o.output = dir + "/id.model";
  o.vocab_size = 100;
  o.normalization = "identity";
  train_sentencepiece(o);
  SentencePieceVocab v(o.output);
  const std::string x = "Zeile 7 mit\xC2\xA0geschütztem Leerzeichen.";
  CHECK(v.decode(v.encode(x)) == x);
  CHECK(std::filesystem::exists(dir + "/id.vocab"));
}

TEST_CASE("vocab: ensure_vocab builds missing vocabularies only", "[data]") {
  const auto dir = test::temp_dir("ensure");
  const auto in = test::write_file(dir + "/t.txt", "a b c\nb c\nc\n");
  CHECK(ensure_vocab(dir + "/v.txt", {in}));
  CHECK(read_lines(dir + "/v.txt") == std::vector<std::string>{"c 3", "b 2", "a 1"});
  CHECK(!ensure_vocab(dir + "/v.txt", {in}));
  SpmTrainOptions o;
  o.vocab_size = 20;
  CHECK(ensure_vocab(dir + "/v.spm", {in}, o));
  CHECK(SentencePieceVocab(dir + "/v.spm").decode(SentencePieceVocab(dir + "/v.spm").encode("a b c")) == "a b c");
}
