// Model checkpoints: one safetensors file with every parameter under its own name (readable by
// PyTorch/NumPy), the architecture as YAML in the metadata ("moe.model"), and the vocabulary files
// embedded as u8 tensors ("vocab.src", "vocab.tgt") so that translating or scoring needs only the
// checkpoint. Written atomically (temp file + rename). Training state (optimizer, data position,
// RNG, step) goes into a second file next to it, "<path>.state" (see trainer).
// Covered by tests/training/checkpoint_test.cpp.
#pragma once
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/vocab.h"
#include "graph/parameters.h"
#include "models/int8_model.h"
#include "models/model_registry.h"

namespace moe {

/// A vocabulary file carried inside a checkpoint: its original file name (the extension tells its
/// kind: .model = SentencePiece, else a word list) and its bytes.
struct VocabFile {
  std::string role;  // "src", "tgt" or "lm"
  std::string file_name;
  std::string bytes;
  static VocabFile read(const std::string& role, const std::string& path);
};

/// With quantize = int8, a pre-quantized checkpoint (models/int8_model.h; parameters on the CPU).
void save_checkpoint(const std::string& path, const Model& model, const ParameterStore& params,
                     const std::vector<VocabFile>& vocabs, const std::map<std::string, std::string>& metadata = {},
                     Quantize quantize = Quantize::none);

struct LoadedCheckpoint {
  std::unique_ptr<Model> model;
  std::unique_ptr<ParameterStore> params;
  std::map<std::string, std::unique_ptr<data::Vocab>> vocabs;  // by role
  std::vector<VocabFile> vocab_files;
  std::map<std::string, std::string> metadata;
  std::map<std::string, Int8Matrix> int8;  // a pre-quantized checkpoint's int8 weights, by parameter name
  const data::Vocab& vocab(const std::string& role) const;
  /// The vocabulary of the first of `roles` it carries (a joint vocabulary is stored once, under one role),
  /// or nullptr; first_vocab: the same, an error naming the first role when it carries none of them.
  const data::Vocab* find_vocab(std::initializer_list<const char*> roles) const;
  const data::Vocab& first_vocab(std::initializer_list<const char*> roles) const;
};

/// Loads a checkpoint onto `device` (a pre-quantized one: its int8 weights, and their values q * scale as the
/// parameters); errors name the file and what is missing or inconsistent.
LoadedCheckpoint load_checkpoint(const std::string& path, Device device);

/// Copies the parameters of a checkpoint file into an existing store (names and shapes must match).
void load_parameters_into(const std::string& path, ParameterStore& params);

}  // namespace moe
