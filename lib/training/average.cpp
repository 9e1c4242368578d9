// average.h implementation. Covered by tests/training/checkpoint_test.cpp.
#include "training/average.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "common/error.h"
#include "tensor/safetensors.h"

namespace moe {

namespace fs = std::filesystem;

void average_checkpoints(const std::vector<std::string>& inputs, const std::string& output) {
  MOE_CHECK(!inputs.empty(), "moe-average: no input checkpoints");
  SafetensorsFile first = load_safetensors(inputs[0]);
  MOE_CHECK(first.metadata.count("moe.model"), inputs[0], ": not a moe checkpoint (no 'moe.model' metadata)");
  auto check_f32 = [](const SafetensorsFile& f, const std::string& path) {
    MOE_CHECK(f.metadata.count("moe.quantize") == 0, "moe-average: ", path,
              " is pre-quantized (moe-average --quantize); average the f32 checkpoints it came from");
  };
  check_f32(first, inputs[0]);
  std::vector<std::vector<double>> sums(first.tensors.size());
  for (size_t i = 0; i < first.tensors.size(); ++i)
    if (first.tensors[i].second.dtype() == DType::f32) {
      const auto v = first.tensors[i].second.to_vector<float>();
      sums[i].assign(v.begin(), v.end());
    }
  for (size_t k = 1; k < inputs.size(); ++k) {
    const SafetensorsFile f = load_safetensors(inputs[k]);
    check_f32(f, inputs[k]);
    auto model = f.metadata.find("moe.model");
    MOE_CHECK(model != f.metadata.end() && model->second == first.metadata.at("moe.model"), "moe-average: ", inputs[k],
              " holds a different model than ", inputs[0]);
    for (size_t i = 0; i < first.tensors.size(); ++i) {
      const auto& [name, t0] = first.tensors[i];
      if (t0.dtype() != DType::f32) continue;
      MOE_CHECK(f.has(name), "moe-average: ", inputs[k], " has no parameter '", name, "'");
      const Tensor& t = f.get(name);
      MOE_CHECK(t.shape() == t0.shape() && t.dtype() == DType::f32, "moe-average: parameter '", name, "' is ",
                dtype_name(t.dtype()), " ", t.shape(), " in ", inputs[k], " but f32 ", t0.shape(), " in ", inputs[0]);
      const auto v = t.to_vector<float>();
      for (size_t j = 0; j < v.size(); ++j) sums[i][j] += v[j];
    }
  }
  std::vector<std::pair<std::string, Tensor>> out;
  const double n = static_cast<double>(inputs.size());
  for (size_t i = 0; i < first.tensors.size(); ++i) {
    const auto& [name, t0] = first.tensors[i];
    if (t0.dtype() != DType::f32) {
      out.emplace_back(name, t0);
      continue;
    }
    std::vector<float> mean(sums[i].size());
    for (size_t j = 0; j < mean.size(); ++j) mean[j] = static_cast<float>(sums[i][j] / n);
    out.emplace_back(name, Tensor::from_vector(mean, t0.shape()));
  }
  std::string list;
  for (const auto& p : inputs) list += (list.empty() ? "" : ",") + p;
  first.metadata["moe.averaged"] = list;
  save_safetensors(output, out, first.metadata);
}

std::vector<std::string> last_numbered_checkpoints(const std::string& run_dir, int64_t n) {
  MOE_CHECK(n > 0, "moe-average: --last must be > 0, got ", n);
  MOE_CHECK(fs::is_directory(run_dir), "moe-average: run folder ", run_dir, " does not exist");
  static const std::regex numbered(R"(checkpoint\.(\d+)\.safetensors)");
  std::vector<std::pair<int64_t, std::string>> found;
  for (const auto& e : fs::directory_iterator(run_dir)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (std::regex_match(name, m, numbered)) found.emplace_back(std::stoll(m[1].str()), e.path().string());
  }
  std::sort(found.begin(), found.end());
  MOE_CHECK(static_cast<int64_t>(found.size()) >= n, "moe-average: --last ", n, " but ", run_dir, " holds ",
            found.size(), " numbered checkpoints (checkpoint.<update>.safetensors; see train.keep_last)");
  std::vector<std::string> out;
  for (size_t i = found.size() - static_cast<size_t>(n); i < found.size(); ++i) out.push_back(found[i].second);
  return out;
}

}  // namespace moe
