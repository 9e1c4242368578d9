// Vocabularies: the abstract Vocab (encode/decode, special ids), SentencePieceVocab (the linked
// library; models trained here are ordinary SentencePiece models, loadable by the Python package)
// and WordVocab for pre-tokenized LM corpora (file: one token per line, or "token count").
// Reserved ids, the same for every vocabulary trained here: <pad>=0, <unk>=1, <s>=2, </s>=3.
// encode() never adds <s>/</s>; the batchers add them (source: x </s>; target: <s> y / y </s>).
// Covered by tests/data/vocab_test.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace moe::data {

inline constexpr int32_t kPadId = 0, kUnkId = 1, kBosId = 2, kEosId = 3;

class Vocab {
 public:
  virtual ~Vocab() = default;
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  /// Text of the ids; <pad>, <s> and </s> are dropped.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual int32_t size() const = 0;
  virtual std::string piece(int32_t id) const = 0;
  virtual int32_t pad_id() const { return kPadId; }
  virtual int32_t unk_id() const { return kUnkId; }
  virtual int32_t bos_id() const { return kBosId; }
  virtual int32_t eos_id() const { return kEosId; }
};

class SentencePieceVocab : public Vocab {
 public:
  explicit SentencePieceVocab(const std::string& model_path);
  ~SentencePieceVocab() override;
  std::vector<int32_t> encode(std::string_view text) const override;
  /// One segmentation drawn at random (SentencePiece's SampleEncode: a unigram model draws among its `nbest` best
  /// (-1: all) with sharpness `alpha`; a BPE model drops each merge with probability `alpha`), from the calling
  /// thread's generator (data/subword_sampling.h seeds it).
  std::vector<int32_t> sample_encode(std::string_view text, int nbest, float alpha) const;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t size() const override;
  std::string piece(int32_t id) const override;
  int32_t pad_id() const override { return pad_; }
  int32_t unk_id() const override { return unk_; }
  int32_t bos_id() const override { return bos_; }
  int32_t eos_id() const override { return eos_; }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  int32_t pad_, unk_, bos_, eos_;
};

/// Whitespace-split words. Reserved tokens come first; `<unk>`/`<UNK>` in the file or the text
/// map to unk_id, `</s>`/`</S>` to eos_id, `<s>`/`<S>` to bos_id.
class WordVocab : public Vocab {
 public:
  explicit WordVocab(const std::string& path);
  explicit WordVocab(const std::vector<std::string>& tokens);  // tokens after the reserved four
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int32_t size() const override { return static_cast<int32_t>(tokens_.size()); }
  std::string piece(int32_t id) const override;
  int32_t id_of(std::string_view token) const;

 private:
  void add(const std::string& token);
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t> index_;
};

/// .model / .spm: SentencePiece; anything else: a word vocabulary file.
std::unique_ptr<Vocab> load_vocab(const std::string& path);

/// FNV-1a 64-bit hash of a file's bytes (the vocabulary part of token-cache keys).
uint64_t hash_file(const std::string& path);

}  // namespace moe::data
