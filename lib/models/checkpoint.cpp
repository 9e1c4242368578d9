// checkpoint.h implementation.
#include "models/checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tensor/safetensors.h"

namespace moe {

VocabFile VocabFile::read(const std::string& role, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  MOE_CHECK(in.good(), "cannot read vocabulary file ", path);
  std::ostringstream os;
  os << in.rdbuf();
  return {role, std::filesystem::path(path).filename().string(), os.str()};
}

void save_checkpoint(const std::string& path, const Model& model, const ParameterStore& params,
                     const std::vector<VocabFile>& vocabs, const std::map<std::string, std::string>& metadata,
                     Quantize quantize) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const ParamEntry& e : params.entries()) {
    const Tensor value = params.value(params.find(e.name));
    const Int8Role role = quantize == Quantize::int8 ? int8_role(e) : Int8Role::keep_f32;
    if (role != Int8Role::keep_f32)
      append_int8_weight(tensors, e.name, quantize_int8(value, role == Int8Role::per_row));
    else
      tensors.emplace_back(e.name, value);
  }
  std::map<std::string, std::string> meta = metadata;
  if (quantize != Quantize::none) meta["moe.quantize"] = enum_name(quantize);
  meta.insert_or_assign("moe.format", std::string("1"));  // not operator= "1": a GCC 12 -Wrestrict false positive
  meta["moe.model"] = YAML::Dump(model.config_yaml());
  for (const VocabFile& v : vocabs) {
    std::vector<uint8_t> bytes(v.bytes.begin(), v.bytes.end());
    tensors.emplace_back("vocab." + v.role,
                         Tensor::from_vector(bytes, Shape{static_cast<int64_t>(bytes.size())}, Device::cpu()));
    meta["moe.vocab." + v.role] = v.file_name;
  }
  save_safetensors(path, tensors, meta);
}

const data::Vocab& LoadedCheckpoint::vocab(const std::string& role) const {
  auto it = vocabs.find(role);
  MOE_CHECK(it != vocabs.end(), "the checkpoint carries no '", role, "' vocabulary");
  return *it->second;
}

const data::Vocab* LoadedCheckpoint::find_vocab(std::initializer_list<const char*> roles) const {
  for (const char* r : roles)
    if (auto it = vocabs.find(r); it != vocabs.end()) return it->second.get();
  return nullptr;
}

const data::Vocab& LoadedCheckpoint::first_vocab(std::initializer_list<const char*> roles) const {
  const data::Vocab* v = find_vocab(roles);
  return v ? *v : vocab(*roles.begin());  // the error names the first role
}

LoadedCheckpoint load_checkpoint(const std::string& path, Device device) {
  // Tensor by tensor: the parameters are declared from the header, the store allocated, then each tensor is
  // read straight into its place (on a GPU through a buffer of its size), so that a load never holds the
  // file's tensors beside the parameters (it did: twice the model at the peak of a translation's memory).
  SafetensorsReader file(path);
  const std::map<std::string, std::string>& metadata = file.metadata();
  auto model_yaml = metadata.find("moe.model");
  MOE_CHECK(model_yaml != metadata.end(), path, ": not a moe checkpoint (no 'moe.model' metadata)");
  LoadedCheckpoint out;
  out.metadata = metadata;
  out.model = create_model(YAML::Load(model_yaml->second));
  out.params = std::make_unique<ParameterStore>(device);
  std::vector<std::pair<int, const SafetensorsEntry*>> values;  // f32 parameters: read after allocate()
  const auto tmp_dir = std::filesystem::temp_directory_path() / ("moe-vocab-" + std::to_string(::getpid()));
  for (const SafetensorsEntry& e : file.entries()) {
    const std::string& name = e.name;
    if (name.rfind("vocab.", 0) == 0) {
      const std::string role = name.substr(6);
      const Tensor t = file.read(e);
      VocabFile v{role, metadata.at("moe.vocab." + role), std::string(static_cast<const char*>(t.raw()), t.bytes())};
      std::filesystem::create_directories(tmp_dir);
      const std::string vpath = (tmp_dir / (role + "." + v.file_name)).string();
      std::ofstream(vpath, std::ios::binary) << v.bytes;
      out.vocabs[role] = data::load_vocab(vpath);
      std::filesystem::remove(vpath);
      out.vocab_files.push_back(std::move(v));
      continue;
    }
    const auto ends_with = [](const std::string& s, const std::string& suffix) {
      return s.size() > suffix.size() && s.ends_with(suffix);
    };
    if (ends_with(name, kInt8ScaleSuffix)) continue;  // read with its weight
    if (ends_with(name, kInt8Suffix)) {               // a pre-quantized weight: its values q * scale below
      const std::string stem = name.substr(0, name.size() - kInt8Suffix.size());
      const SafetensorsEntry* scale = file.find(stem + kInt8ScaleSuffix);
      MOE_CHECK(scale, path, ": '", name, "' has no scales '", stem, kInt8ScaleSuffix, "'");
      auto [param, m] = read_int8_weight(path, name, file.read(e), file.read(*scale));
      out.params->declare(param, m.shape, Init::zeros());
      out.int8.emplace(param, std::move(m));
      continue;
    }
    MOE_CHECK(e.dtype == DType::f32, path, ": parameter '", name, "' is ", dtype_name(e.dtype), ", expected f32");
    values.emplace_back(out.params->declare(name, e.shape, Init::zeros()), &e);
  }
  std::filesystem::remove_all(tmp_dir);
  out.params->allocate();
  for (const auto& [index, e] : values) {
    Tensor value = out.params->value(index);
    if (value.device().is_cpu())
      file.read(*e, value);
    else
      value.copy_from(file.read(*e));
  }
  for (const auto& [param, m] : out.int8) out.params->value(param).copy_from(dequantize_int8(m));
  return out;
}

void load_parameters_into(const std::string& path, ParameterStore& params) {
  SafetensorsFile file = load_safetensors(path);
  for (const ParamEntry& e : params.entries()) {
    MOE_CHECK(file.has(e.name), path, ": has no parameter '", e.name, "'");
    const Tensor& t = file.get(e.name);
    MOE_CHECK(t.shape() == e.shape, path, ": parameter '", e.name, "' has shape ", t.shape(), ", the model needs ",
              e.shape);
    MOE_CHECK(t.dtype() == DType::f32, path, ": parameter '", e.name, "' is ", dtype_name(t.dtype()), ", expected f32");
    params.value(params.find(e.name)).copy_from(t);
  }
}

}  // namespace moe
