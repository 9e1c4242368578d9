// Vocabulary implementations: SentencePiece (linked library) and word-level. Special ids are read
// from a SentencePiece model (ours use pad=0 unk=1 bos=2 eos=3); word vocabularies fix them.
// Covered by tests/data/vocab_test.cpp.
#include "data/vocab.h"

#include <sentencepiece_processor.h>

#include <fstream>

#include "common/error.h"
#include "data/corpus.h"

namespace moe::data {

SentencePieceVocab::SentencePieceVocab(const std::string& model_path)
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  sentencepiece::util::Status st;
  try {  // the library throws from inside on some corrupt models (e.g. an empty piece: Darts' trie)
    st = sp_->Load(model_path);
  } catch (const std::exception& e) {
    MOE_FAIL("vocab: cannot load SentencePiece model '", model_path, "': ", e.what());
  }
  MOE_CHECK(st.ok(), "vocab: cannot load SentencePiece model '", model_path, "': ", st.ToString());
  pad_ = sp_->pad_id();
  unk_ = sp_->unk_id();
  bos_ = sp_->bos_id();
  eos_ = sp_->eos_id();
  MOE_CHECK(pad_ >= 0 && bos_ >= 0 && eos_ >= 0, "vocab: SentencePiece model '", model_path,
            "' lacks pad/bos/eos pieces (pad=", pad_, " bos=", bos_, " eos=", eos_,
            "); train it with moe-vocab or --pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3");
}

SentencePieceVocab::~SentencePieceVocab() = default;

std::vector<int32_t> SentencePieceVocab::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto st = sp_->Encode(absl::string_view(text.data(), text.size()), &ids);
  MOE_CHECK(st.ok(), "vocab: SentencePiece encode failed: ", st.ToString());
  return {ids.begin(), ids.end()};
}

std::vector<int32_t> SentencePieceVocab::sample_encode(std::string_view text, int nbest, float alpha) const {
  std::vector<int> ids;
  const auto st = sp_->SampleEncode(absl::string_view(text.data(), text.size()), nbest, alpha, &ids);
  MOE_CHECK(st.ok(), "vocab: SentencePiece sampling (nbest ", nbest, ", alpha ", alpha, ") failed: ", st.ToString());
  return {ids.begin(), ids.end()};
}

std::string SentencePieceVocab::decode(const std::vector<int32_t>& ids) const {
  std::vector<int> keep;
  keep.reserve(ids.size());
  for (int32_t id : ids) {
    if (id == pad_ || id == bos_ || id == eos_) continue;
    MOE_CHECK(id >= 0 && id < size(), "vocab: decode: id ", id, " outside [0, ", size(), ")");
    keep.push_back(id);
  }
  std::string out;
  const auto st = sp_->Decode(keep, &out);
  MOE_CHECK(st.ok(), "vocab: SentencePiece decode failed: ", st.ToString());
  return out;
}

int32_t SentencePieceVocab::size() const { return sp_->GetPieceSize(); }

std::string SentencePieceVocab::piece(int32_t id) const {
  MOE_CHECK(id >= 0 && id < size(), "vocab: piece: id ", id, " outside [0, ", size(), ")");
  return sp_->IdToPiece(id);
}

void WordVocab::add(const std::string& token) {
  if (index_.count(token)) return;
  index_.emplace(token, static_cast<int32_t>(tokens_.size()));
  tokens_.push_back(token);
}

WordVocab::WordVocab(const std::vector<std::string>& tokens) {
  for (const char* t : {"<pad>", "<unk>", "<s>", "</s>"}) add(t);
  index_.emplace("<UNK>", kUnkId);
  index_.emplace("<S>", kBosId);
  index_.emplace("</S>", kEosId);
  for (const auto& t : tokens) add(t);
}

namespace {
std::vector<std::string> read_word_list(const std::string& path) {
  LineReader r(path);
  std::vector<std::string> tokens;
  std::string line;
  while (r.next(line)) {
    line.erase(line.find_last_not_of(" \t") + 1);  // trailing blanks are no count (npos + 1 == 0)
    if (line.empty()) continue;
    const size_t sp = line.find_first_of(" \t");
    std::string tok = line.substr(0, sp);
    if (sp != std::string::npos) {
      const std::string rest = line.substr(line.find_first_not_of(" \t", sp));
      MOE_CHECK(!rest.empty() && rest.find_first_not_of("0123456789") == std::string::npos, "vocab: '", path, "' line ",
                r.line_number(), ": expected 'token' or 'token count', got '", line, "'");
    }
    MOE_CHECK(!tok.empty(), "vocab: '", path, "' line ", r.line_number(), ": empty token");
    tokens.push_back(std::move(tok));
  }
  return tokens;
}
}  // namespace

WordVocab::WordVocab(const std::string& path) : WordVocab(read_word_list(path)) {
  MOE_CHECK(tokens_.size() > 4, "vocab: word vocabulary '", path, "' holds no tokens");
}

int32_t WordVocab::id_of(std::string_view token) const {
  auto it = index_.find(std::string(token));
  return it == index_.end() ? kUnkId : it->second;
}

std::vector<int32_t> WordVocab::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  size_t i = 0;
  const size_t n = text.size();
  std::string tok;
  while (i < n) {
    while (i < n && (text[i] == ' ' || text[i] == '\t')) ++i;
    size_t j = i;
    while (j < n && text[j] != ' ' && text[j] != '\t') ++j;
    if (j > i) {
      tok.assign(text.data() + i, j - i);
      auto it = index_.find(tok);
      ids.push_back(it == index_.end() ? kUnkId : it->second);
    }
    i = j;
  }
  return ids;
}

std::string WordVocab::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    if (id == kPadId || id == kBosId || id == kEosId) continue;
    if (!out.empty()) out += ' ';
    out += piece(id);
  }
  return out;
}

std::string WordVocab::piece(int32_t id) const {
  MOE_CHECK(id >= 0 && id < size(), "vocab: piece: id ", id, " outside [0, ", size(), ")");
  return tokens_[static_cast<size_t>(id)];
}

std::unique_ptr<Vocab> load_vocab(const std::string& path) {
  auto ends = [&](const std::string& s) { return path.size() >= s.size() && path.rfind(s) == path.size() - s.size(); };
  if (ends(".model") || ends(".spm")) return std::make_unique<SentencePieceVocab>(path);
  return std::make_unique<WordVocab>(path);
}

uint64_t hash_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  MOE_CHECK(in.good(), "vocab: cannot open '", path, "' to hash it");
  uint64_t h = 1469598103934665603ull;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    for (std::streamsize i = 0; i < in.gcount(); ++i) h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
  }
  return h;
}

}  // namespace moe::data
